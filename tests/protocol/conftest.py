"""Hypothesis profiles for the protocol property tests.

``protocol-ci`` (derandomized; chosen when ``CI=true``), ``protocol-nightly`` (10x the examples, random) and
``protocol-dev`` (the CI budget, random; the default).  ``HYPOTHESIS_PROFILE=ci|nightly|dev`` picks one by hand.
The profiles are registered under their own names and handed to the tests through the ``protocol_profile``
fixture, so loading them changes nothing for other test packages.
"""

import os

import pytest
from hypothesis import settings

from ctasim.protocol.explore import PROFILES, profile_settings

for _name in PROFILES:
    settings.register_profile(f"protocol-{_name}", parent=profile_settings(_name))


def _chosen() -> str:
    name = os.environ.get("HYPOTHESIS_PROFILE", "")
    if name in PROFILES:
        return name
    return "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev"


@pytest.fixture(scope="session")
def protocol_profile() -> str:
    """Name of the profile in force (``ci``, ``nightly`` or ``dev``)."""
    return _chosen()


@pytest.fixture(scope="session")
def protocol_settings(protocol_profile) -> settings:
    return settings.get_profile(f"protocol-{protocol_profile}")
