"""What every API endpoint shares: the error format, throttles, request size limits, the URL map."""
