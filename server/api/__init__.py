"""What every API endpoint shares: the error format (and the answer to the services' refusals),
throttles, request size limits, the listings' filters. The URL map is the server's, in
``server/urls.py``; nothing here imports an app."""
