"""Atom feeds (Django's syndication framework): the released networks of every run, and the
accepted and rolled-back networks of a run (``?run=NAME``, else the current run). Each entry links
the network's page and carries its file as an enclosure."""

from __future__ import annotations

from django.contrib.syndication.views import Feed
from django.http import Http404
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed, Enclosure

from common.elo import Z95
from server.ratings.models import NetworkEvent
from server.runs.models import Run

ENTRIES = 30
ACCEPTED = (NetworkEvent.Kind.ACCEPTED, NetworkEvent.Kind.FORCED_ACCEPT)


class _NetworkEvents(Feed):
    feed_type = Atom1Feed
    kinds: tuple[str, ...] = ()

    def get_object(self, request, *args, **kwargs):
        self.request = request
        return None

    def events(self):
        return (
            NetworkEvent.objects.filter(kind__in=self.kinds)
            .select_related("network__run", "network__rating")
            .order_by("-created_at", "-id")
        )

    def item_title(self, event: NetworkEvent) -> str:
        verb = {
            NetworkEvent.Kind.RELEASED: "released",
            NetworkEvent.Kind.ROLLED_BACK: "rolled back",
        }.get(NetworkEvent.Kind(event.kind), "accepted")
        return f"{event.network.name} {verb}"

    def item_description(self, event: NetworkEvent) -> str:
        network = event.network
        rating = getattr(network, "rating", None)
        parts = [f"Run {network.run.name}."]
        if rating is not None and rating.elo is not None and rating.elo_se is not None:
            parts.append(f"Elo {rating.elo:+.0f} ± {Z95 * rating.elo_se:.0f} over {rating.games} rating games.")
        if network.size_name:
            parts.append(f"Architecture {network.size_name}, {network.train_step:,} training samples.")
        parts.append(event.get_kind_display().capitalize() + (f": {event.note}" if event.note else "."))
        return " ".join(parts)

    def item_link(self, event: NetworkEvent) -> str:
        return reverse("network", args=[event.network.name])

    def item_guid(self, event: NetworkEvent) -> str:
        return self.request.build_absolute_uri(f"{self.item_link(event)}#event-{event.pk}")

    def item_pubdate(self, event: NetworkEvent):
        return event.created_at

    def item_updateddate(self, event: NetworkEvent):
        return event.created_at

    def item_enclosures(self, event: NetworkEvent) -> list[Enclosure]:
        network = event.network
        if network.is_random or not network.file:
            return []
        url = self.request.build_absolute_uri(reverse("network-file", args=[network.name]))
        return [Enclosure(url, str(network.size_bytes), "application/octet-stream")]


class ReleasesFeed(_NetworkEvents):
    """Networks released for Go players, of every run."""

    title = "Sente: released networks"
    subtitle = "Networks released for Go players to download, newest first."
    kinds = (NetworkEvent.Kind.RELEASED,)

    def link(self) -> str:
        return reverse("releases")

    def items(self):
        return self.events()[:ENTRIES]


class NetworksFeed(_NetworkEvents):
    """A run's accepted networks (by their gating or by staff) and its rollbacks."""

    kinds = (*ACCEPTED, NetworkEvent.Kind.ROLLED_BACK)

    def get_object(self, request, *args, **kwargs):
        self.request = request
        name = request.GET.get("run")
        run = Run.objects.filter(name=name).first() if name else Run.objects.current()
        if run is None:
            raise Http404(f"there is no run named {name!r}" if name else "no run is active")
        return run

    def title(self, run: Run) -> str:
        return f"Sente: networks of run {run.name}"

    def subtitle(self, run: Run) -> str:
        return f"Networks accepted for self-play in run {run.name}, and those rolled back, newest first."

    def link(self, run: Run) -> str:
        return reverse("networks") + f"?run={run.name}"

    def items(self, run: Run):
        return self.events().filter(network__run=run)[:ENTRIES]
