"""The Textual debugger. The only package of fpdebug that imports Textual."""
