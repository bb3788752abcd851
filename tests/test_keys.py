from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omoide.errors import InvalidSessionKey
from omoide.keys import parse_session_key, session_key
from omoide.models import KeyPolicy


def test_policies_build_stable_strings():
    assert str(session_key(platform="discord", workspace=1, channel=2, user=3)) == "discord:1:c=2:u=3"
    assert str(session_key(platform="discord", workspace=1, channel=2, policy="channel")) == "discord:1:c=2"
    assert str(session_key(platform="slack", workspace="T1", channel="C2", thread="17.5", policy="thread")) == (
        "slack:T1:c=C2:t=17.5"
    )
    assert (
        str(session_key(workspace="default", agent="my-project", policy=KeyPolicy.AGENT))
        == "agent:default:a=my-project"
    )


def test_thread_policy_without_thread_is_the_channel_session():
    key = session_key(platform="slack", workspace="T1", channel="C2", policy="thread")
    assert key.policy is KeyPolicy.CHANNEL
    assert key.value == "slack:T1:c=C2"


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"platform": "discord", "workspace": "", "channel": 1, "user": 2}, "'workspace' must not be empty"),
        ({"platform": "discord", "workspace": "  ", "channel": 1, "user": 2}, "must not be empty"),
        ({"platform": "discord", "workspace": 1, "channel": 1}, "'user' is required"),
        ({"platform": "discord", "workspace": 1, "user": 2}, "'channel' is required"),
        ({"platform": "discord", "workspace": 1.5, "channel": 1, "user": 2}, "string or an integer"),
        ({"platform": "discord", "workspace": True, "channel": 1, "user": 2}, "string or an integer"),
        ({"platform": "discord", "workspace": [1], "channel": 1, "user": 2}, "string or an integer"),
        ({"platform": "discord", "workspace": "a\nb", "channel": 1, "user": 2}, "control character"),
        ({"platform": "discord", "workspace": "x" * 300, "channel": 1, "user": 2}, "longer than"),
        ({"workspace": 1, "policy": "agent"}, "'agent' is required"),
        ({"platform": "d", "workspace": 1, "channel": 1, "user": 2, "policy": "nope"}, "unknown key policy"),
    ],
)
def test_bad_parts_are_rejected(kwargs, fragment):
    with pytest.raises(InvalidSessionKey, match=fragment):
        session_key(**kwargs)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "discord",
        "discord:1",
        "discord:1:x=2",
        "discord:1:u=2",
        "discord:1:c=2:c=3",
        "discord:1:c=2:a=3",
        "d:1:c=%41",
    ],
)
def test_parse_rejects_malformed_keys(text):
    with pytest.raises(InvalidSessionKey):
        parse_session_key(text)


_part = st.text(min_size=1, max_size=40).filter(
    lambda s: s.strip() == s and s and all(ord(c) >= 32 and ord(c) != 127 for c in s)
)


@given(platform=_part, workspace=_part, channel=_part, user=_part)
def test_keys_round_trip_through_their_string(platform, workspace, channel, user):
    key = session_key(platform=platform, workspace=workspace, channel=channel, user=user)
    assert parse_session_key(key.value) == key
    assert key.value.count(":") == 3  # ':' inside parts is escaped


@given(workspace=_part, agent=_part)
def test_agent_keys_round_trip(workspace, agent):
    key = session_key(workspace=workspace, agent=agent, policy="agent")
    assert parse_session_key(str(key)) == key
