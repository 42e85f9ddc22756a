"""The use cases the command line calls: resolve names and files, open the store, call the layers, return results."""
