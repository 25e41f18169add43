"""The Sente server: the Django project that hands out self-play work, stores games and networks,
rates networks, schedules training and serves the dashboard."""
