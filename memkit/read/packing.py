"""How a read packs what it recalled (``assemble.py`` does the packing): the options, as one object from
``ReadOptions.packing`` to the packer, and their defaults."""

from __future__ import annotations

from dataclasses import dataclass

# chosen on the dev splits (docs/decisions.md, "Repeats and diversity"): words this alike make two lines one, and a turn's
# passages shown before other turns have theirs
NEAR_REPEATS = 0.8
PASSAGES_PER_TURN = 1
# maximal marginal relevance's weight on novelty (``diversified``): 0, off, level with or above 0.6 on all four real
# splits and a read's time saved (docs/decisions.md, "Repeats and diversity")
DIVERSITY = 0.0
# the recalled items a read takes before the rest of the profile block (a profile fact also comes just before the
# first recalled turn it was read from): chosen on the BEAM 100K dev split (docs/decisions.md, "Profile block")
PROFILE_AFTER = 8


@dataclass(frozen=True)
class PackOptions:
    """How recalled facts and episodes are packed: one object from the read (``ReadOptions.packing``) to the
    packer. ``spare_sources``: a shown fact spares its source turns; ``diversity``: maximal marginal
    relevance's weight on novelty; ``dates``: a date line per session shown; ``fold_repeats`` and
    ``near_repeats``: a line said again shown once; ``passages_per_turn``: a long turn's passages before other
    turns have theirs; ``speaker_runs``: a speaker's name once for their lines in a row; ``profile_after``: the
    recalled items the rest of the profile block comes after, each of its facts also just before the first
    recalled turn it came from (0: the block before them all)."""

    spare_sources: bool = True
    diversity: float = DIVERSITY
    dates: bool = True
    fold_repeats: bool = True
    near_repeats: float = NEAR_REPEATS
    passages_per_turn: int = PASSAGES_PER_TURN
    speaker_runs: bool = True
    profile_after: int = PROFILE_AFTER
