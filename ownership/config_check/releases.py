"""SGLang releases: parsing them with packaging.version, and the row of the release table each one is judged by.

The release table of docs/protocols/sglang-pd.md lists 0.5.19 to 0.5.23, each with the fixes
it shipped (`RELEASE_FIXES`, the same sets as `releases` in specs/sglang_pd.py). A release
string is read as PEP 440 says (`packaging.version.Version`), so `0.5.21.post1` is not
`0.5.21`, and `0.5.21.dev0 < 0.5.21rc1 < 0.5.21 < 0.5.21.post1` order correctly. A release
that is not a row of the table is judged by the newest row not after it (`table_release`):

- a post release (`0.5.21.post1`) comes after its base release, so it has the base's fixes;
- a pre-release or development release of X (`0.5.21rc1`, `0.5.21.dev0`) comes before X, so it
  has the fixes of the release before X (0.5.20);
- a local build (`0.5.21+cu130`) is judged as its public release (0.5.21);
- a release older than the table counts as its first row, and one newer as its last.

A row for a suffixed release, if the table ever gets one (a pre-release found to carry a fix
already), comes first: the rule above only decides releases the table does not name.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from ownership.errors import ConfigError

from .bounds import _MAX_VERSION_CHARS, brief

#: The release table of docs/protocols/sglang-pd.md: the sglang_pd fixes each release shipped
#: (#36988 in 0.5.20, #38935 in 0.5.21), oldest first. The same as `releases` in
#: specs/sglang_pd.py (a test keeps them equal); #38704's coverage check is open in 0.5.23.
RELEASE_FIXES: dict[str, tuple[str, ...]] = {
    "0.5.19": (),
    "0.5.20": ("post-forward-retire",),
    "0.5.21": ("post-forward-retire", "door-retire"),
    "0.5.22": ("post-forward-retire", "door-retire"),
    "0.5.23": ("post-forward-retire", "door-retire"),
}

#: The first SGLang release whose intake door retires a rejected request before bootstrap, on
#: prefill and on decode (#38935; the release table of docs/protocols/sglang-pd.md).
SGLANG_DOOR_RELEASE = (0, 5, 21)
#: The first SGLang release that retires an aborted request after the prefill forward (#36988).
SGLANG_RETIRE_RELEASE = (0, 5, 20)
#: The releases the table of docs/protocols/sglang-pd.md was read from (0.5.19 and 0.5.23).
SGLANG_TABLE_RELEASES = ((0, 5, 19), (0, 5, 23))

_ROWS = sorted((Version(row), row) for row in RELEASE_FIXES)


def parse_version(text: str, *, source: str = "--release") -> Version:
    """'0.5.19', 'v0.5.21.post1', '0.5.21rc1' -> a packaging Version, ordered as PEP 440 says.

    A release has at least three numbers (major.minor.patch) and no epoch; `source` names
    where the release was read, for the error.
    """
    wrong = ConfigError(f"{source} {brief(text)} is not an SGLang release like 0.5.23")
    if len(text) > _MAX_VERSION_CHARS:
        raise wrong
    try:
        version = Version(text)
    except InvalidVersion:
        raise wrong from None
    if len(version.release) < 3 or version.epoch != 0:
        raise wrong
    return version


def _older(a: str, b: str) -> str:
    return a if parse_version(a) <= parse_version(b) else b


def _kind(version: Version) -> str:
    """What a release with a suffix is, in words ('' for a plain release)."""
    base = version.base_version
    if version.pre is not None or (version.dev is not None and version.post is None):
        kind = f"a pre-release of {base}"
    elif version.dev is not None:
        kind = f"a development release of {base}.post{version.post}"
    elif version.post is not None:
        kind = f"a post release of {base}"
    else:
        kind = ""
    if version.local is not None:
        kind = f"a local build of {version.public}" + (f", {kind}" if kind else "")
    return kind


def table_release(text: str) -> tuple[str, str]:
    """The row of the release table that the release `text` is judged by, and why in words.

    The words are '' when the release is a row itself (`v0.5.21` is the row 0.5.21); else, e.g.,
    'a pre-release of 0.5.21, so as 0.5.20' or 'newer than the release table, so as 0.5.23'.
    """
    version = parse_version(text)
    public = Version(version.public)
    exact = next((row for v, row in _ROWS if v == public), None)
    if exact is not None and version.local is None:
        return exact, ""
    earlier = [row for v, row in _ROWS if v <= public]
    row = earlier[-1] if earlier else _ROWS[0][1]
    words = [_kind(version)] if exact is None else [f"a local build of {exact}"]
    if not earlier:
        words.append("older than the release table")
    elif Version(version.base_version) > _ROWS[-1][0]:
        words.append("newer than the release table")
    elif exact is None and not words[0]:
        words.append("not in the release table")
    return row, ", ".join(w for w in words if w) + f", so as {row}"


def release_fixes(text: str) -> tuple[str, ...]:
    """The sglang_pd fixes of the release `text`: those of its row (`table_release`)."""
    return RELEASE_FIXES[table_release(text)[0]]
