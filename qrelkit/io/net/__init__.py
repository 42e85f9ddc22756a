"""io's networking, in a room of its own: which hosts a URL may name (`urls`), resumable downloads
with size caps and mirrors (`download`), a bundle's files fetched and checked (`fetch`), and its
images (`fetch_images`). Nothing else in io opens a connection."""
