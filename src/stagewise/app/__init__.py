"""The local web app (``stagewise serve``): the lesson's playground and relabelling with live metrics.

Needs the ``app`` extra (Starlette, uvicorn). An entry layer beside ``cli/``: it calls the library and shows.
"""
