"""The one naming rule of target and source secrets (SecretNames), checked on generated references."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.domain.secret_names import SECRET_REF_PATTERN, SecretNameError, SecretNames

PREFIX = "lakehook/my-stack/"
NAMES = SecretNames(PREFIX)
ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:"

refs = st.one_of(
    st.text(alphabet="abcXYZ019/_+=.@-:", min_size=1, max_size=40),
    st.text(alphabet="ab/-", max_size=20).map(lambda rest: f"{PREFIX}{rest}"),
    st.text(alphabet="ab/-", min_size=1, max_size=20).map(lambda rest: f"{ARN}{PREFIX}{rest}"),
    st.text(alphabet="ab/-", min_size=1, max_size=20).map(lambda rest: f"{ARN}{rest}"),
)


@given(refs)
def test_the_name_looked_up_names_itself_and_lies_under_the_prefix(ref: str) -> None:
    try:
        name = NAMES.resolve(ref)
    except SecretNameError as exc:
        assert repr(ref) in str(exc) and PREFIX in str(exc)  # the message names the reference and the rule
        return
    # what the CLI prints is what a rule may name: resolving it again answers the same secret
    assert NAMES.resolve(name) == name
    assert name.split(":secret:", 1)[-1].startswith(PREFIX)
    assert re.fullmatch(SECRET_REF_PATTERN, name)


@pytest.mark.parametrize(
    ("ref", "name"),
    [
        ("targets/x", f"{PREFIX}targets/x"),
        ("/targets/x", f"{PREFIX}targets/x"),
        (f"{PREFIX}targets/x", f"{PREFIX}targets/x"),
        ("lakehook/targets/x", f"{PREFIX}lakehook/targets/x"),  # another stack's spelling is still relative
        (f"{ARN}{PREFIX}targets/x-AbCdEf", f"{ARN}{PREFIX}targets/x-AbCdEf"),
    ],
)
def test_a_reference_is_relative_to_the_prefix_unless_it_starts_with_it(ref: str, name: str) -> None:
    assert NAMES.resolve(ref) == name


@pytest.mark.parametrize("ref", ["/", "//", "targets/", f"{ARN}elsewhere/x", "x" * 512])
def test_a_reference_that_reaches_no_secret_of_the_stack_is_refused(ref: str) -> None:
    with pytest.raises(SecretNameError, match="unless it already starts with it"):
        NAMES.resolve(ref)


def test_a_message_names_the_reference_and_when_they_differ_the_name_looked_up() -> None:
    assert NAMES.spelled(f"{PREFIX}x") == f"'{PREFIX}x'"
    assert NAMES.spelled("x") == f"'x' (looked up as '{PREFIX}x': {NAMES.rule})"


def test_a_missing_secret_is_said_with_the_name_looked_up_and_how_to_create_it() -> None:
    assert NAMES.missing("x") == (
        f"secret 'x' (looked up as '{PREFIX}x': {NAMES.rule}) does not exist; create it first with "
        "`lakehook secret put x`"
    )
    assert NAMES.missing(f"{ARN}{PREFIX}x").endswith("create it first by its name")
