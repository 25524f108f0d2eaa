"""Privacy auditing: membership-inference attacks, canaries, black-box and one-run audits of
mechanisms with empirical epsilon lower bounds.

* :mod:`~jdp.audit.attacks` -- membership inference on released models / synthetic data.
* :mod:`~jdp.audit.bounds` -- epsilon lower bounds from attack outcomes.
* :mod:`~jdp.audit.canaries` -- worst-case canaries and likelihood-ratio scores.
* :mod:`~jdp.audit.run` -- audits of the library's mechanisms (registry) and of DP-SGD.

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
from jdp.audit.bounds import EpsilonLowerBound, epsilon_lower_bound, one_run_epsilon_lower_bound
from jdp.audit.density_attack import density_ratio_attack, density_ratio_scores
from jdp.audit.run import (
    MECHANISM_AUDITS,
    AuditResult,
    OneRunResult,
    audit_mechanism,
    one_run_dpsgd_audit,
    run_mechanism_audit,
)

__all__ = [
    "MECHANISM_AUDITS",
    "METRICS",
    "AttackResult",
    "AuditResult",
    "EpsilonLowerBound",
    "OneRunResult",
    "attack_from_scores",
    "audit_mechanism",
    "dcr_attack",
    "density_ratio_attack",
    "density_ratio_scores",
    "distance_to_closest_record_scores",
    "epsilon_lower_bound",
    "membership_attack",
    "one_run_dpsgd_audit",
    "one_run_epsilon_lower_bound",
    "run_mechanism_audit",
    "white_box_scores",
]
