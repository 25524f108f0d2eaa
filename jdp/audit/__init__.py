"""Privacy auditing: membership-inference attacks (and, later, canaries and empirical
epsilon lower bounds).

Auditing reads the user's real data, as evaluation does; its numbers are attack
measurements, never privacy guarantees (only the accounted epsilon is one). Nothing here is
passed to a synthesizer: ``jdp.synth`` never imports ``jdp.audit``; only the CLI does.
"""

from jdp.audit.attacks import (
    METRICS,
    AttackResult,
    attack_from_scores,
    dcr_attack,
    distance_to_closest_record_scores,
    membership_attack,
    white_box_scores,
)

__all__ = [
    "METRICS",
    "AttackResult",
    "attack_from_scores",
    "dcr_attack",
    "distance_to_closest_record_scores",
    "membership_attack",
    "white_box_scores",
]
