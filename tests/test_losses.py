import numpy as np

from nnxrl.ops.losses import normalize, policy_loss, value_loss


def test_policy_loss_clips_on_both_sides():
    # ratios exp(log_prob - old): 1.5 (above 1 + eps), 0.5 (below 1 - eps), 1.1 (inside)
    old = np.zeros(4, np.float32)
    log_prob = np.log(np.array([1.5, 0.5, 1.1, 1.5], np.float32))
    adv = np.array([2.0, -1.0, 3.0, -2.0], np.float32)
    eps = 0.2
    loss, kl, clip_frac = policy_loss(log_prob, old, adv, eps)
    # by hand: min(r A, clip(r) A) per item
    #  r=1.5, A=2  -> min(3.0, 1.2*2=2.4)      = 2.4   (clipped above)
    #  r=0.5, A=-1 -> min(-0.5, 0.8*-1=-0.8)   = -0.8  (clipped below)
    #  r=1.1, A=3  -> min(3.3, 3.3)            = 3.3
    #  r=1.5, A=-2 -> min(-3.0, -2.4)          = -3.0  (pessimistic: unclipped)
    expected = -np.mean([2.4, -0.8, 3.3, -3.0])
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    r = np.array([1.5, 0.5, 1.1, 1.5])
    np.testing.assert_allclose(kl, np.mean((r - 1) - np.log(r)), rtol=1e-5)
    np.testing.assert_allclose(clip_frac, 0.75)


def test_value_loss_clipped_and_unclipped():
    values = np.array([1.0, 3.0], np.float32)
    old = np.array([0.0, 2.5], np.float32)
    targets = np.array([2.0, 2.0], np.float32)
    # unclipped: (1-2)^2=1, (3-2)^2=1; clipped at 0.2: old+clip -> 0.2, 2.7
    #  -> (0.2-2)^2=3.24, (2.7-2)^2=0.49; max -> 3.24, 1 ; 0.5*mean = 1.06
    np.testing.assert_allclose(
        value_loss(values, old, targets, 0.2), 0.5 * (3.24 + 1.0) / 2, rtol=1e-5
    )
    np.testing.assert_allclose(value_loss(values, old, targets, None), 0.5 * (1 + 1) / 2)


def test_normalize_zero_mean_unit_std():
    x = np.random.default_rng(0).normal(3.0, 5.0, size=1000).astype(np.float32)
    y = np.asarray(normalize(x))
    assert abs(y.mean()) < 1e-5 and abs(y.std() - 1) < 1e-3
