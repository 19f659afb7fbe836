"""Rendering of results: text tables now; the HTML report later."""
