"""stagewise inside other tools: adapters that let a tool's users choose stagewise without leaving that tool."""
