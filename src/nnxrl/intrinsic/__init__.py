"""Intrinsic-motivation add-ons, usable by any learning algorithm through ``base.Addon``.

Importing this package registers the shipped add-ons (icm, e3b, rnd) next to the
no-bonus default; ``make_addon`` builds the one a config names.
"""

from nnxrl.intrinsic import e3b, icm, rnd  # noqa: F401  (each registers itself)
from nnxrl.intrinsic.base import (
    Addon,
    AddonContext,
    Experience,
    addon_options,
    known_addons,
    make_addon,
    register,
)


def addon_for(config, spec, default_minibatches: int) -> Addon:
    """The add-on ``config.intrinsic`` names, for an env with ``spec`` (an EnvSpec);
    ``intrinsic.num_minibatches`` unset means ``default_minibatches`` (the algorithm's)."""
    i = config.intrinsic
    context = AddonContext(
        obs_shape=tuple(spec.obs_shape),
        num_actions=spec.num_actions,
        action_dim=spec.action_dim,
        num_envs=config.env.num_envs,
        learning_rate=i.learning_rate,
        adam_eps=i.adam_eps,
        max_grad_norm=i.max_grad_norm,
        num_epochs=i.num_epochs,
        num_minibatches=i.num_minibatches or default_minibatches,
    )
    return make_addon(i.addon, i.options, context)


__all__ = [
    "addon_for",
    "Addon",
    "AddonContext",
    "Experience",
    "addon_options",
    "known_addons",
    "make_addon",
    "register",
]
