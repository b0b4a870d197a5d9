"""Malformed input fails its job, never the runtime (issue 9, item 2)."""

import pyarrow as pa
import pytest

import flinkgo as fg


def crafted_table() -> pa.Table:
    # Offsets going backwards ([0, 6, 3]): pyarrow builds this without
    # complaint (only validate(full=True) objects); reading row 1 slices [6:3].
    offsets = pa.py_buffer(pa.array([0, 6, 3], pa.int32()).buffers()[1])
    values = pa.py_buffer(b"abcdef")
    names = pa.StringArray.from_buffers(2, offsets, values)
    return pa.table({"id": pa.array([1, 2], pa.int64()), "name": names})


def test_a_table_with_crafted_offsets_fails_its_job_and_the_runtime_lives_on():
    env = fg.Environment()
    with pytest.raises(fg.JobFailedError) as e:
        env.from_arrow(crafted_table()).to_pandas()
    message = str(e.value)
    assert "invalid Arrow data" in message
    assert 'column "name"' in message
    # The same runtime runs the next job.
    good = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    assert env.from_arrow(good).to_pandas()["id"].tolist() == [1, 2, 3]
