"""notes-portal read path: hybrid search and (later) the web app."""
