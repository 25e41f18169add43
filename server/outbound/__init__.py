"""Posts to other people's servers: where one may go (``targets``: the URL and every address its host
resolves to, checked against private and reserved networks), how each is signed (``signing``:
Standard Webhooks) and the one POST itself (``transport``). No models and no app of the server:
the run's webhook fields and the notices' deliveries both use these."""
