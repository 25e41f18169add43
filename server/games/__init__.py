"""Games uploaded by clients: self-play games (SGF + training rows) and rating games (SGF), checked
in full before anything is stored."""
