import os
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("SENTE_SHARED", ROOT.parent / "shared"))

settings.register_profile("default", deadline=None)
settings.load_profile("default")


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared folder with KataGo's golden outputs and models (beside the checkout)."""
    if not SHARED.is_dir():
        pytest.fail(f"shared data folder {SHARED} not found; set SENTE_SHARED to its path")
    return SHARED
