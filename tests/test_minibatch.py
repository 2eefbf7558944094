import jax
import numpy as np

from nnxrl.ops.minibatch import flatten_time, shuffle_into_minibatches


def test_epoch_visits_every_item_once_in_a_fresh_order():
    batch = {"x": np.arange(24), "y": np.arange(24) * 10}
    a = shuffle_into_minibatches(jax.random.key(0), batch, 4)
    b = shuffle_into_minibatches(jax.random.key(1), batch, 4)
    assert a["x"].shape == (4, 6)
    assert sorted(np.asarray(a["x"]).ravel()) == list(range(24))
    np.testing.assert_array_equal(a["y"], a["x"] * 10)  # leaves stay aligned
    assert not np.array_equal(a["x"], b["x"])


def test_flatten_time():
    x = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    assert flatten_time({"x": x})["x"].shape == (6, 4)
