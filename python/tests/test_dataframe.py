import subprocess
import sys
import threading

import cloudpickle
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq
import pytest

import flinkgo as fg
from flinkgo import ColumnNotFoundError, DataFrame, Environment, col, lit, udf
from flinkgo._proto import plan_pb2, worker_pb2
from flinkgo.types import schema_from_ipc_bytes

Kind = plan_pb2.Partitioning.Kind


@pytest.fixture
def env():
    return Environment()


@pytest.fixture
def readings():
    return pd.DataFrame(
        {
            "sensor": ["a", "b", "a", "c"],
            "temp": [20.5, 31.0, 22.0, None],
            "n": [1, 2, 3, 4],
        }
    )


def logical(schema: pa.Schema) -> pa.Schema:
    """`schema` with one logical string type (pandas 3's large_string as string)."""
    return pa.schema(
        [f.with_type(pa.string()) if pa.types.is_large_string(f.type) else f for f in schema]
    )


def arrow_of(pdf: pd.DataFrame) -> pa.Table:
    """What pyarrow makes of a pandas DataFrame, as the plan should carry it."""
    table = pa.Table.from_pandas(pdf, preserve_index=False).replace_schema_metadata(None)
    return table.cast(logical(table.schema))


def plan_of(env: Environment, name: str = "flinkgo job") -> plan_pb2.JobPlan:
    """The plan as the runtime receives it: the message of env.plan(name).to_bytes()."""
    return plan_pb2.JobPlan.FromString(env.plan(name).to_bytes())


def schema_of(node: plan_pb2.Node) -> pa.Schema:
    return schema_from_ipc_bytes(node.output_schema)


def kinds(plan):
    return [n.WhichOneof("kind") for n in plan.nodes]


def edges(node):
    return [(i.node, i.partitioning.kind, list(i.partitioning.keys)) for i in node.inputs]


# --- Environment ----------------------------------------------------------------------------


def test_environment_options_reach_the_plan(readings):
    config = {"pipeline.forward-mismatch": "fail", "python.fn-execution.bundle.size": "500"}
    env = Environment(parallelism=4, config=config, endpoint="localhost:8081")
    config["pipeline.forward-mismatch"] = "rescale"  # the environment keeps its copy
    env.from_pandas(readings).print()
    plan = plan_of(env, name="readings")
    assert plan.name == "readings"
    assert plan.default_parallelism == 4
    assert dict(plan.config) == {
        "pipeline.forward-mismatch": "fail",
        "python.fn-execution.bundle.size": "500",
    }
    assert env.endpoint == "localhost:8081"
    assert env.parallelism == 4


def test_environment_defaults(readings):
    env = Environment()
    env.from_pandas(readings).print()
    plan = plan_of(env)
    assert plan.name == "flinkgo job"
    assert plan.default_parallelism == 0
    assert dict(plan.config) == {}
    assert env.endpoint is None


def test_environment_reports_every_bad_option_at_once():
    with pytest.raises(TypeError) as info:
        Environment(parallelism="2", config={"a": 1, "": "x"}, endpoint="")
    message = str(info.value)
    assert "Environment: parallelism must be a positive integer, got '2'" in message
    assert "Environment: config['a'] must be a string, got 1 (of type int); write it as '1'" in (
        message
    )
    assert "Environment: config keys must be non-empty strings, got ''" in message
    assert "Environment: endpoint must be a non-empty string" in message


@pytest.mark.parametrize("parallelism", [0, -1, 32769])
def test_environment_parallelism_range(parallelism):
    with pytest.raises(ValueError, match=r"parallelism must be a positive integer \(1 to 32768\)"):
        Environment(parallelism=parallelism)


def test_environment_options_are_keyword_only():
    with pytest.raises(TypeError):
        Environment(2)


def test_plan_without_sinks_fails(env, readings):
    env.from_pandas(readings).filter(col("n") > 1)
    with pytest.raises(
        ValueError, match=r"plan: the job has no sink; end each pipeline with df.print\(\)"
    ):
        plan_of(env)


# --- in-memory sources ----------------------------------------------------------------------


def test_from_pandas_schema_and_data_match_pyarrow(env, readings):
    indexed = readings.set_index(pd.Index([10, 11, 12, 13]))  # the index is dropped
    df = env.from_pandas(indexed)
    expected = arrow_of(readings)
    assert df.schema == expected.schema
    assert df.columns == ["sensor", "temp", "n"]
    df.print()
    (source, sink) = plan_of(env).nodes
    assert source.WhichOneof("kind") == "source"
    assert source.source.WhichOneof("kind") == "arrow"
    assert source.name == "from_pandas(4 rows)"
    assert schema_of(source) == expected.schema
    assert schema_of(source).metadata is None
    shipped = pa.ipc.open_stream(source.source.arrow.ipc).read_all()
    assert shipped.equals(expected)
    assert shipped.to_pandas().equals(readings)


def test_from_pandas_errors(env):
    with pytest.raises(TypeError, match="from_pandas: expected a pandas.DataFrame, got dict"):
        env.from_pandas({"a": [1]})
    with pytest.raises(
        TypeError, match=r"from_pandas: column names must be strings, got 0 \(of type int\)"
    ):
        env.from_pandas(pd.DataFrame([[1, 2]]))
    dup = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(
        ValueError, match=r"from_pandas: the column 'a' appears more than once: \['a', 'a'\]"
    ):
        env.from_pandas(dup)
    with pytest.raises(TypeError, match="from_pandas: a column does not convert to Arrow"):
        env.from_pandas(pd.DataFrame({"mixed": [1, "x", object()]}))


def test_from_arrow_accepts_tables_batches_and_readers(env):
    table = pa.table({"x": pa.array([1, 2, 3], pa.int32()), "y": ["a", "b", "c"]})
    batches = table.to_batches(max_chunksize=2)
    assert len(batches) == 2
    sources = [
        env.from_arrow(table),
        env.from_arrow(batches[0]),
        env.from_arrow(batches),
        env.from_arrow(iter(batches)),
        env.from_arrow(pa.RecordBatchReader.from_batches(table.schema, batches)),
    ]
    for df in sources:
        assert df.schema == table.schema
        df.print()
    plan = plan_of(env)
    shipped = [pa.ipc.open_stream(n.source.arrow.ipc).read_all() for n in plan.nodes[::2]]
    assert [t.num_rows for t in shipped] == [3, 2, 3, 3, 3]
    assert shipped[0].equals(table)
    assert plan.nodes[0].name == "from_arrow(3 rows)"


def test_from_arrow_errors(env):
    with pytest.raises(ValueError, match="from_arrow: no record batches given"):
        env.from_arrow([])
    # (a dict argument to record_batch needs pyarrow 15; we support 14)
    a = pa.record_batch([pa.array([1])], names=["x"])
    b = pa.record_batch([pa.array(["s"])], names=["x"])
    with pytest.raises(
        ValueError, match="from_arrow: record batch 1 has another schema than batch 0"
    ):
        env.from_arrow([a, b])
    with pytest.raises(
        TypeError, match="from_arrow: item 1 is a int, expected a pyarrow.RecordBatch"
    ):
        env.from_arrow([a, 1])
    with pytest.raises(TypeError, match="from_arrow: expected a pyarrow.Table"):
        env.from_arrow(42)
    with pytest.raises(ValueError, match="the schema has no columns"):
        env.from_arrow(pa.table({}))


# --- file sources ---------------------------------------------------------------------------


def test_read_csv_infers_the_schema_like_pyarrow(env, readings, tmp_path):
    for i in (2, 0, 1):
        readings.to_csv(tmp_path / f"part-{i}.csv", index=False)
    (tmp_path / "other.txt").write_text("not csv")
    df = env.read_csv(str(tmp_path / "part-*.csv"))
    assert df.schema == pacsv.read_csv(tmp_path / "part-0.csv").schema
    assert df.schema == pa.schema(
        [("sensor", pa.string()), ("temp", pa.float64()), ("n", pa.int64())]
    )
    df.print()
    source = plan_of(env).nodes[0]
    assert source.name == f"read_csv({tmp_path / 'part-*.csv'})"
    file = source.source.file
    assert file.format == plan_pb2.FileSource.CSV
    assert list(file.paths) == [str(tmp_path / f"part-{i}.csv") for i in (0, 1, 2)]
    assert (file.csv_has_header, file.csv_delimiter) == (True, ",")
    assert schema_of(source) == df.schema


def test_read_csv_relative_path_is_made_absolute(env, readings, tmp_path, monkeypatch):
    readings.to_csv(tmp_path / "r.csv", index=False)
    monkeypatch.chdir(tmp_path)
    env.read_csv("r.csv").print()
    assert list(plan_of(env).nodes[0].source.file.paths) == [str(tmp_path / "r.csv")]


def test_read_csv_options(env, readings, tmp_path):
    path = tmp_path / "r.tsv"
    readings.to_csv(path, index=False, header=False, sep="\t")
    df = env.read_csv(path, delimiter="\t", has_header=False)
    assert df.columns == ["f0", "f1", "f2"]
    assert (
        df.schema
        == pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(delimiter="\t"),
        ).schema
    )
    df.print()
    file = plan_of(env).nodes[0].source.file
    assert (file.csv_has_header, file.csv_delimiter) == (False, "\t")


def test_read_csv_with_a_schema(env, readings, tmp_path):
    path = tmp_path / "r.csv"
    readings.to_csv(path, index=False)
    # With a header, by name (other columns skipped).
    df = env.read_csv(path, schema={"n": "int32", "sensor": "string"})
    assert df.schema == pa.schema([("n", pa.int32()), ("sensor", pa.string())])
    # Without, by position.
    bare = tmp_path / "bare.csv"
    readings.to_csv(bare, index=False, header=False)
    schema = pa.schema([("s", pa.string()), ("t", pa.float32()), ("k", pa.int16())])
    assert env.read_csv(bare, schema=schema, has_header=False).schema == schema


def test_read_csv_schema_mismatch(env, readings, tmp_path):
    path = tmp_path / "r.csv"
    readings.to_csv(path, index=False)
    with pytest.raises(
        ValueError, match=r"read_csv: '.*r.csv' does not match the given schema \(nope: int64\)"
    ):
        env.read_csv(path, schema={"nope": "int64"})
    with pytest.raises(ValueError, match=r"does not match the given schema \(sensor: int64\)"):
        env.read_csv(path, schema={"sensor": "int64"})


def test_read_csv_errors(env, tmp_path):
    pattern = str(tmp_path / "missing-*.csv")
    with pytest.raises(FileNotFoundError) as info:
        env.read_csv(pattern)
    assert str(info.value).startswith(f"read_csv: no file matches the glob pattern {pattern!r}")
    with pytest.raises(FileNotFoundError, match="read_csv: no file matches the path '.*nope.csv'"):
        env.read_csv(tmp_path / "nope.csv")
    with pytest.raises(
        IsADirectoryError, match="is a directory; give a file or a glob pattern such as"
    ):
        env.read_csv(tmp_path)
    with pytest.raises(ValueError, match="read_csv: delimiter must be one character, got ';;'"):
        env.read_csv(pattern, delimiter=";;")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(
        ValueError, match="read_csv: cannot infer the schema of '.*empty.csv': the file is empty"
    ):
        env.read_csv(tmp_path / "empty.csv")
    # An empty first file fits a given schema.
    assert env.read_csv(tmp_path / "empty.csv", schema={"x": "int64"}).columns == ["x"]
    with pytest.raises(TypeError, match="read_csv: expected a path or a glob pattern"):
        env.read_csv(3)


def test_read_jsonl_infers_the_schema_like_pyarrow(env, readings, tmp_path):
    path = tmp_path / "r.jsonl"
    readings.to_json(path, orient="records", lines=True)
    df = env.read_jsonl(path)
    assert df.schema == pajson.read_json(path).schema
    assert df.schema == pa.schema(
        [("sensor", pa.string()), ("temp", pa.float64()), ("n", pa.int64())]
    )
    df.print()
    source = plan_of(env).nodes[0]
    assert source.source.file.format == plan_pb2.FileSource.JSONL
    assert list(source.source.file.paths) == [str(path)]
    given = env.read_jsonl(path, schema=pa.schema([("n", pa.int32()), ("extra", pa.string())]))
    assert given.columns == ["n", "extra"]


def test_read_jsonl_errors(env, tmp_path):
    with pytest.raises(
        FileNotFoundError, match="read_jsonl: no file matches the glob pattern '.*x-\\*.jsonl'"
    ):
        env.read_jsonl(tmp_path / "x-*.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(
        ValueError, match="read_jsonl: cannot infer .* the file is empty; pass schema="
    ):
        env.read_jsonl(tmp_path / "empty.jsonl")
    assert env.read_jsonl(tmp_path / "empty.jsonl", schema={"x": "int64"}).columns == ["x"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"n": "text"}\n')
    with pytest.raises(
        ValueError, match=r"read_jsonl: '.*bad.jsonl' does not match the given schema \(n: int64\)"
    ):
        env.read_jsonl(bad, schema={"n": "int64"})


def test_read_parquet(env, readings, tmp_path):
    readings.to_parquet(tmp_path / "b.parquet")
    readings.to_parquet(tmp_path / "a.parquet")
    df = env.read_parquet(tmp_path / "*.parquet")
    assert df.schema == logical(pq.read_schema(tmp_path / "a.parquet").remove_metadata())
    assert df.schema == arrow_of(readings).schema
    df.print()
    file = plan_of(env).nodes[0].source.file
    assert file.format == plan_pb2.FileSource.PARQUET
    assert list(file.paths) == [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]


def test_read_parquet_errors(env, tmp_path):
    with pytest.raises(FileNotFoundError, match="read_parquet: no file matches"):
        env.read_parquet(tmp_path / "*.parquet")
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(
        ValueError, match="read_parquet: cannot read the Parquet schema of '.*x.parquet'"
    ):
        env.read_parquet(tmp_path / "x.parquet")


def test_recursive_glob(env, readings, tmp_path):
    (tmp_path / "d1" / "d2").mkdir(parents=True)
    readings.to_csv(tmp_path / "d1" / "d2" / "deep.csv", index=False)
    readings.to_csv(tmp_path / "top.csv", index=False)
    env.read_csv(tmp_path / "**" / "*.csv").print()
    paths = list(plan_of(env).nodes[0].source.file.paths)
    assert paths == sorted([str(tmp_path / "d1" / "d2" / "deep.csv"), str(tmp_path / "top.csv")])


# --- datagen --------------------------------------------------------------------------------


def test_datagen_schema_forms(env):
    as_dict = env.datagen(schema={"id": "int64", "name": "str", "t": pa.timestamp("ms")})
    as_schema = env.datagen(
        schema=pa.schema([("id", pa.int64()), ("name", pa.string()), ("t", pa.timestamp("ms"))])
    )
    assert as_dict.schema == as_schema.schema
    assert as_dict.columns == ["id", "name", "t"]


def test_datagen_options_in_the_plan(env):
    env.datagen(schema={"x": "double"}).print()
    env.datagen(rows=1000, schema={"x": "double"}, rows_per_second=250.5, seed=-3).print()
    plan = plan_of(env)
    unbounded, bounded = plan.nodes[0].source.datagen, plan.nodes[2].source.datagen
    assert (unbounded.rows, unbounded.rows_per_second, unbounded.seed) == (0, 0.0, 0)
    assert (bounded.rows, bounded.rows_per_second, bounded.seed) == (1000, 250.5, -3)
    assert plan.nodes[0].name == "datagen"
    assert schema_of(plan.nodes[0]) == pa.schema([("x", pa.float64())])


def test_datagen_errors(env):
    with pytest.raises(ValueError, match=r"datagen: rows must be a positive integer"):
        env.datagen(rows=0, schema={"x": "int64"})
    with pytest.raises(TypeError, match="datagen: rows must be a positive integer, got 1.5"):
        env.datagen(rows=1.5, schema={"x": "int64"})
    with pytest.raises(
        ValueError, match="datagen: rows_per_second must be a positive finite number"
    ):
        env.datagen(schema={"x": "int64"}, rows_per_second=0)
    with pytest.raises(TypeError, match="datagen: seed must be an integer"):
        env.datagen(schema={"x": "int64"}, seed="1")
    with pytest.raises(
        TypeError, match="datagen: cannot generate the column 'l' of type list<item: int64>"
    ):
        env.datagen(schema={"l": pa.list_(pa.int64())})
    with pytest.raises(
        ValueError, match="datagen: bad type for column 'x': unknown Arrow type name 'int65'"
    ):
        env.datagen(schema={"x": "int65"})
    with pytest.raises(TypeError, match="datagen: schema must be a pyarrow.Schema or a dict"):
        env.datagen(schema=[("x", "int64")])
    with pytest.raises(ValueError, match="datagen: the schema has no columns"):
        env.datagen(schema={})
    with pytest.raises(TypeError):
        env.datagen(rows=10)  # schema is required


# --- select, with_column, filter ------------------------------------------------------------


def test_select_schema_matches_pandas(env, readings):
    df = env.from_pandas(readings).select(
        "sensor", (col("n") * 2).alias("n2"), (col("temp") / col("n")).alias("ratio")
    )
    expected = arrow_of(
        pd.DataFrame(
            {"sensor": readings.sensor, "n2": readings.n * 2, "ratio": readings.temp / readings.n}
        )
    )
    assert df.schema == expected.schema
    df.print()
    node = plan_of(env).nodes[1]
    assert node.WhichOneof("kind") == "select"
    assert node.name == "select(sensor, n * 2 AS n2, temp / n AS ratio)"
    assert [c.name for c in node.select.columns] == ["sensor", "n2", "ratio"]
    assert node.select.columns[0].expr == plan_pb2.Expr(column="sensor")
    assert node.select.columns[1].expr.call.function == "multiply"
    assert schema_of(node) == expected.schema
    assert edges(node) == [(1, Kind.FORWARD_IMPLICIT, [])]


def test_select_forms_and_errors(env, readings):
    df = env.from_pandas(readings)
    assert df.select(["n", "sensor"]).columns == ["n", "sensor"]
    assert df.select(lit(1).alias("one")).schema == pa.schema([("one", pa.int64())])
    with pytest.raises(
        ValueError,
        match="select: the output has the column 'n' more than once; rename one with .alias()",
    ):
        df.select("n", col("n") + 1)
    with pytest.raises(
        ColumnNotFoundError,
        match=r"select: unknown column 'sensr'; columns are \['sensor', 'temp', 'n'\]",
    ):
        df.select("sensr")
    with pytest.raises(ValueError, match="select: no columns given"):
        df.select()
    with pytest.raises(TypeError, match="select: expected an expression"):
        df.select(object())


def test_with_column_replaces_in_place_or_appends(env, readings):
    df = env.from_pandas(readings)
    replaced = df.with_column("n", col("n").cast("int32"))
    assert replaced.schema == pa.schema(
        [df.schema.field("sensor"), df.schema.field("temp"), pa.field("n", pa.int32())]
    )
    appended = df.with_column("half", col("n") / 2)
    expected = arrow_of(readings.assign(half=readings.n / 2))
    assert appended.schema == expected.schema
    appended.print()
    node = plan_of(env).nodes[1]
    assert node.name == "with_column(half = n / 2)"
    assert [c.name for c in node.select.columns] == ["sensor", "temp", "n", "half"]
    assert [c.expr.column for c in node.select.columns[:3]] == ["sensor", "temp", "n"]
    assert node.select.columns[3].expr.call.function == "divide"


def test_with_columns_schema_matches_pandas(env, readings):
    df = env.from_pandas(readings).with_columns(
        n=col("n") * 10, hot=col("temp") > 25, missing=col("temp").is_null(), one=1
    )
    expected = arrow_of(
        readings.assign(
            n=readings.n * 10, hot=readings.temp > 25, missing=readings.temp.isna(), one=1
        )
    )
    assert df.schema == expected.schema
    assert df.columns == ["sensor", "temp", "n", "hot", "missing", "one"]


def test_with_columns_sees_the_input_not_each_other(env, readings):
    df = env.from_pandas(readings)
    with pytest.raises(ColumnNotFoundError, match="with_columns 'b': unknown column 'a'"):
        df.with_columns(a=col("n") + 1, b=col("a") * 2)
    with pytest.raises(ValueError, match="with_columns: no columns given"):
        df.with_columns()


def test_with_column_errors_name_the_column(env, readings):
    df = env.from_pandas(readings)
    with pytest.raises(TypeError, match=r"with_column 'x': cannot evaluate `sensor \+ 1`"):
        df.with_column("x", col("sensor") + 1)
    with pytest.raises(TypeError, match="with_column: the column name must be a non-empty string"):
        df.with_column("", col("n"))


def test_filter(env, readings):
    df = env.from_pandas(readings)
    hot = df.filter((col("temp") > 25) | col("temp").is_null())
    assert hot.schema == df.schema
    flagged = df.with_column("flag", col("n") > 2).filter("flag")  # a bool column by name
    flagged.print()
    hot.print()
    plan = plan_of(env)
    assert kinds(plan) == ["source", "select", "filter", "sink", "filter", "sink"]
    by_name = {n.name: n for n in plan.nodes}
    assert by_name["filter(flag)"].filter.predicate == plan_pb2.Expr(column="flag")
    predicate = by_name["filter((temp > 25) | temp.is_null())"].filter.predicate
    assert predicate.call.function == "or"
    assert [a.call.function for a in predicate.call.args] == ["greater", "is_null"]


def test_filter_errors(env):
    df = env.from_pandas(pd.DataFrame({"sensor": ["a"], "temperature": [1.0]}))
    with pytest.raises(ColumnNotFoundError) as info:
        df.filter(col("temprature") > 30)
    assert str(info.value).startswith(
        "filter: unknown column 'temprature'; columns are ['sensor', 'temperature']"
    )
    with pytest.raises(
        TypeError,
        match=r"filter: the predicate `temperature \* 2` is of type double, expected bool",
    ):
        df.filter(col("temperature") * 2)
    with pytest.raises(TypeError, match="filter: cannot evaluate `sensor > 3`"):
        df.filter(col("sensor") > 3)


def test_udf_in_select_carries_the_spec(env, readings):
    @udf("double", concurrency=3)
    def to_fahrenheit(c):
        return c * 1.8 + 32

    df = env.from_pandas(readings).with_column("f", to_fahrenheit(col("temp")))
    assert df.schema.field("f").type == pa.float64()
    df.print()
    node = plan_of(env).nodes[1]
    call = node.select.columns[3].expr.udf
    assert call.udf.name == "to_fahrenheit"
    assert call.udf.concurrency == 3
    assert list(call.args) == [plan_pb2.Expr(column="temp")]
    assert cloudpickle.loads(call.udf.payload)(100) == 212.0
    assert node.name == "with_column(f = to_fahrenheit(temp))"


def test_udf_in_filter(env, readings):
    @udf("bool", func_type="pandas")
    def is_a(s):
        return s == "a"

    env.from_pandas(readings).filter(is_a(col("sensor"))).print()
    predicate = plan_of(env).nodes[1].filter.predicate
    assert predicate.udf.udf.func_type == worker_pb2.FUNC_TYPE_PANDAS
    assert list(predicate.udf.args) == [plan_pb2.Expr(column="sensor")]


def test_unpicklable_udf_fails_where_it_is_applied(env, readings):
    lock = threading.Lock()

    @udf("int64")
    def guarded(x):
        with lock:
            return x

    with pytest.raises(TypeError, match="select: udf 'guarded': the function cannot be pickled"):
        env.from_pandas(readings).select(guarded(col("n")))


# --- map_batches ----------------------------------------------------------------------------


def explode_words(batch: pd.DataFrame) -> pd.DataFrame:
    return batch.assign(word=batch["text"].str.split()).explode("word")[["word"]]


def test_map_batches_ships_a_pandas_batch_spec_with_the_whole_schema(env):
    df = env.from_pandas(pd.DataFrame({"text": ["a b", "c"]}))
    out = df.map_batches(explode_words, schema={"word": "string"})
    assert out.schema == pa.schema([("word", pa.string())])
    out.print()
    node = plan_of(env).nodes[1]
    assert node.WhichOneof("kind") == "map_batches"
    assert node.name == "map_batches(explode_words)"
    spec = node.map_batches.function
    assert spec.name == "explode_words"
    assert spec.func_type == worker_pb2.FUNC_TYPE_PANDAS_BATCH
    assert spec.is_async is False
    assert schema_from_ipc_bytes(spec.return_schema) == out.schema
    assert schema_of(node) == out.schema
    fn = cloudpickle.loads(spec.payload)
    result = fn(pd.DataFrame({"text": ["a b", "c"]}))
    assert result["word"].tolist() == ["a", "b", "c"]
    assert pa.Table.from_pandas(result, preserve_index=False).column_names == out.columns


def test_map_batches_name_and_schema_forms(env):
    df = env.from_pandas(pd.DataFrame({"x": [1]}))
    schema = pa.schema([("x", pa.int64()), ("y", pa.float64())])
    out = df.map_batches(lambda b: b.assign(y=b.x / 2), schema=schema, name="halve")
    assert out.schema == schema
    out.print()
    assert plan_of(env).nodes[1].map_batches.function.name == "halve"


def test_map_batches_unpicklable_function(env):
    df = env.from_pandas(pd.DataFrame({"x": [1]}))
    lock = threading.Lock()

    def guarded(batch):
        with lock:
            return batch

    with pytest.raises(TypeError) as info:
        df.map_batches(guarded, schema={"x": "int64"})
    message = str(info.value)
    assert message.startswith(
        "map_batches: udf 'guarded': the function cannot be pickled with cloudpickle"
    )
    assert "lock" in message
    assert info.value.__cause__ is not None


def test_map_batches_errors(env):
    df = env.from_pandas(pd.DataFrame({"x": [1]}))
    with pytest.raises(TypeError, match="map_batches: schema must be a pyarrow.Schema or a dict"):
        df.map_batches(lambda b: b, schema=None)
    with pytest.raises(
        TypeError, match="map_batches: expected a plain function .* got the UDF 'f'"
    ):
        df.map_batches(udf(lambda b: b, "int64", name="f"), schema={"x": "int64"})

    async def later(b):
        return b

    with pytest.raises(
        ValueError, match="map_batches: udf 'later': an async def UDF must have func_type 'general'"
    ):
        df.map_batches(later, schema={"x": "int64"})
    with pytest.raises(TypeError, match="map_batches: udf\\(\\): expected a function"):
        df.map_batches(3, schema={"x": "int64"})


# --- key_by and agg -------------------------------------------------------------------------


def test_keyed_aggregate_plan_and_types_match_pandas(env, readings):
    df = env.from_pandas(readings)
    agg = df.key_by("sensor").agg(
        fg.mean("temp").alias("avg_temp"),
        fg.sum("n").alias("total"),
        fg.count(),
        fg.count("temp").alias("readings"),
        fg.min("n").alias("lo"),
        fg.max(col("temp")).alias("hi"),
    )
    expected = arrow_of(
        readings.groupby("sensor", as_index=False).agg(
            avg_temp=("temp", "mean"),
            total=("n", "sum"),
            count=("n", "size"),
            readings=("temp", "count"),
            lo=("n", "min"),
            hi=("temp", "max"),
        )
    )
    assert agg.schema == expected.schema
    agg.print()
    node = plan_of(env).nodes[1]
    assert node.WhichOneof("kind") == "keyed_aggregate"
    assert edges(node) == [(1, Kind.HASH, ["sensor"])]
    assert list(node.keyed_aggregate.keys) == ["sensor"]
    assert [(a.function, a.column, a.name) for a in node.keyed_aggregate.aggregates] == [
        ("mean", "temp", "avg_temp"),
        ("sum", "n", "total"),
        ("count", "", "count"),
        ("count", "temp", "readings"),
        ("min", "n", "lo"),
        ("max", "temp", "hi"),
    ]
    assert node.name == (
        "key_by(sensor).agg(mean(temp) AS avg_temp, sum(n) AS total, count(), "
        "count(temp) AS readings, min(n) AS lo, max(temp) AS hi)"
    )
    assert schema_of(node) == expected.schema


def test_keyed_aggregate_types_match_pyarrow_group_by(env):
    table = pa.table(
        {
            "k1": pa.array(["a", "b"]),
            "k2": pa.array([1, 1], pa.int16()),
            "i": pa.array([1, 2], pa.int32()),
            "u": pa.array([1, 2], pa.uint8()),
            "f": pa.array([1.0, 2.0], pa.float32()),
        }
    )
    df = env.from_arrow(table).key_by("k1", col("k2"))
    out = df.agg(
        fg.sum("i").alias("i_sum"),
        fg.sum("u").alias("u_sum"),
        fg.mean("i").alias("i_mean"),
        fg.min("f").alias("f_min"),
        fg.max("u").alias("u_max"),
    )
    grouped = table.group_by(["k1", "k2"]).aggregate(
        [("i", "sum"), ("u", "sum"), ("i", "mean"), ("f", "min"), ("u", "max")]
    )
    assert (
        out.schema
        == grouped.select(["k1", "k2", "i_sum", "u_sum", "i_mean", "f_min", "u_max"]).schema
    )
    assert [out.schema.field(n).type for n in ("i_sum", "u_sum", "i_mean", "f_min", "u_max")] == [
        pa.int64(),
        pa.uint64(),
        pa.float64(),
        pa.float32(),
        pa.uint8(),
    ]
    out.print()
    assert edges(plan_of(env).nodes[1]) == [(1, Kind.HASH, ["k1", "k2"])]


def test_key_by_errors(env, readings):
    df = env.from_pandas(readings)
    with pytest.raises(
        ColumnNotFoundError,
        match=r"key_by: unknown column 'sensr'; columns are \['sensor', 'temp', 'n'\]",
    ):
        df.key_by("sensr")
    with pytest.raises(ValueError, match="key_by: no key columns given"):
        df.key_by()
    with pytest.raises(ValueError, match="key_by: the key 'sensor' is given twice"):
        df.key_by("sensor", "sensor")
    with pytest.raises(TypeError, match="key_by: keys are column names or col\\(name\\)"):
        df.key_by(col("n") + 1)
    with pytest.raises(
        ValueError, match=r"key_by: this edge is already partitioned by rebalance\(\)"
    ):
        df.rebalance().key_by("sensor")


def test_agg_errors(env, readings):
    keyed = env.from_pandas(readings).key_by("sensor")
    with pytest.raises(
        ColumnNotFoundError,
        match=r"agg: unknown column 'tmp'; columns are \['sensor', 'temp', 'n'\]",
    ):
        keyed.agg(fg.sum("tmp"))
    with pytest.raises(
        TypeError,
        match=r"agg: cannot compute sum\(sensor\) of type (large_)?string: .*'hash_sum'",
    ):
        keyed.agg(fg.sum("sensor").alias("s"))
    # Default names that would collide become column_function (issue 29 item 18).
    assert keyed.agg(fg.min("temp"), fg.max("temp")).columns == ["sensor", "temp_min", "temp_max"]
    assert keyed.agg(fg.count("sensor")).columns == ["sensor", "sensor_count"]
    with pytest.raises(
        ValueError,
        match=r"agg: the output column 't' of <Aggregate max\(temp\) AS t> has the name of "
        r"another aggregate; rename it with .alias\(\)",
    ):
        keyed.agg(fg.min("temp").alias("t"), fg.max("temp").alias("t"))
    with pytest.raises(ValueError, match="has the name of a key"):
        keyed.agg(fg.count("n").alias("sensor"))
    with pytest.raises(ValueError, match="agg: no aggregates given"):
        keyed.agg()
    with pytest.raises(TypeError, match="agg: expected aggregates such as flinkgo.sum"):
        keyed.agg(col("n"))
    with pytest.raises(
        TypeError, match="sum: aggregates apply to a column, got the expression n \\+ 1"
    ):
        fg.sum(col("n") + 1)


# --- drop_duplicates ------------------------------------------------------------------------


def test_drop_duplicates_plan_and_errors(env, readings):
    df = env.from_pandas(readings)
    out = df.drop_duplicates(subset="sensor")
    assert out.schema == df.schema
    out.print()
    df.drop_duplicates().print()
    subsets = [
        list(n.drop_duplicates.subset) for n in plan_of(env).nodes if n.HasField("drop_duplicates")
    ]
    assert subsets == [["sensor"], ["sensor", "temp", "n"]]
    with pytest.raises(ColumnNotFoundError, match="drop_duplicates: unknown column 'tmp'"):
        df.drop_duplicates(subset=["tmp"])
    with pytest.raises(ValueError, match="drop_duplicates: subset is empty"):
        df.drop_duplicates(subset=[])
    with pytest.raises(ValueError, match="the column 'n' is given twice"):
        df.drop_duplicates(subset=["n", "n"])
    with pytest.raises(TypeError, match="subset holds column names, got 1"):
        df.drop_duplicates(subset=[1])
    with pytest.raises(TypeError):
        df.drop_duplicates(["sensor"])  # keyword-only


# --- union ----------------------------------------------------------------------------------


def test_union(env, readings):
    a = env.from_pandas(readings)
    b = env.from_pandas(readings.iloc[:2]).rebalance()
    c = env.from_pandas(readings.iloc[2:])
    u = a.union(b, c.shuffle())
    assert u.schema == a.schema
    u.print()
    plan = plan_of(env)
    assert kinds(plan) == ["source", "source", "source", "union", "sink"]
    node = plan.nodes[3]
    assert node.name == "union"
    assert edges(node) == [
        (1, Kind.FORWARD_IMPLICIT, []),
        (2, Kind.REBALANCE, []),
        (3, Kind.SHUFFLE, []),
    ]
    assert schema_of(node) == a.schema


def test_union_schema_mismatch_shows_both_schemas(env, readings):
    a = env.from_pandas(readings)
    b = env.from_pandas(readings.assign(n=readings.n.astype("float64")))
    with pytest.raises(ValueError) as info:
        a.union(b)
    message = str(info.value)
    assert message.startswith(
        "union: input 1 (from_pandas(4 rows)) has another schema than this DataFrame"
    )
    s = str(a.schema.field("sensor").type)
    assert f"this DataFrame: sensor: {s}, temp: double, n: int64" in message
    assert f"input 1:        sensor: {s}, temp: double, n: double" in message
    renamed = env.from_pandas(readings.rename(columns={"n": "m"}))
    with pytest.raises(ValueError, match="n: int64\ninput 1: .*m: int64"):
        a.union(renamed)


def test_union_errors(env, readings):
    a = env.from_pandas(readings)
    with pytest.raises(ValueError, match="union: no other DataFrame given"):
        a.union()
    with pytest.raises(ValueError, match="union: input 1 .* belongs to another Environment"):
        a.union(Environment().from_pandas(readings))
    with pytest.raises(
        TypeError,
        match=r"union: input 1 is a pandas(\.core\.frame)?\.DataFrame, not a flinkgo DataFrame",
    ):
        a.union(readings)


def test_union_nullability_is_the_widest(env):
    schema = pa.schema([pa.field("x", pa.int64(), nullable=False)])
    a = env.from_arrow(pa.table({"x": [1]}, schema=schema))
    b = env.from_arrow(pa.table({"x": [2]}))
    assert a.union(b).schema.field("x").nullable is True
    assert a.union(a).schema.field("x").nullable is False


# --- partitioning ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "kind"),
    [
        ("forward", Kind.FORWARD),
        ("rebalance", Kind.REBALANCE),
        ("rescale", Kind.RESCALE),
        ("shuffle", Kind.SHUFFLE),
        ("broadcast", Kind.BROADCAST),
        ("global_", Kind.GLOBAL),
    ],
)
def test_partitioning_applies_to_the_next_edge(env, readings, method, kind):
    df = env.from_pandas(readings)
    parted = getattr(df, method)()
    assert isinstance(parted, DataFrame)
    parted.filter(col("n") > 1).print()
    parted.print()  # also into a sink
    df.print()  # the original DataFrame is unchanged
    plan = plan_of(env)
    assert kinds(plan) == ["source", "filter", "sink", "sink", "sink"]
    assert edges(plan.nodes[1]) == [(1, kind, [])]
    assert edges(plan.nodes[2]) == [(2, Kind.FORWARD_IMPLICIT, [])]
    assert edges(plan.nodes[3]) == [(1, kind, [])]
    assert edges(plan.nodes[4]) == [(1, Kind.FORWARD_IMPLICIT, [])]


def test_the_last_partitioning_call_wins(env, readings):
    env.from_pandas(readings).rebalance().shuffle().print()
    assert edges(plan_of(env).nodes[1]) == [(1, Kind.SHUFFLE, [])]


# --- uid and parallelism --------------------------------------------------------------------


def test_uid_and_parallelism_on_steps_and_sinks(env, readings):
    src = env.from_pandas(readings).uid("src").set_parallelism(1)
    out = src.rebalance().filter(col("n") > 1).set_parallelism(4).uid("filter")
    sink = out.write_csv("/tmp/flinkgo-out").uid("csv").set_parallelism(2)
    assert isinstance(sink, fg.Sink)
    plan = plan_of(env)
    assert [(n.uid, n.parallelism) for n in plan.nodes] == [("src", 1), ("filter", 4), ("csv", 2)]
    # uid() and set_parallelism() keep the pending partitioning.
    assert edges(plan.nodes[1]) == [(1, Kind.REBALANCE, [])]
    env2 = Environment()
    env2.from_pandas(readings).rebalance().uid("x").set_parallelism(2).print()
    assert edges(plan_of(env2).nodes[1]) == [(1, Kind.REBALANCE, [])]


def test_uid_configures_the_shared_step(env, readings):
    src = env.from_pandas(readings)
    src.uid("src")
    src.uid("src")  # the same value again is fine
    src.print()
    assert plan_of(env).nodes[0].uid == "src"
    with pytest.raises(
        ValueError, match="uid: the step from_pandas\\(4 rows\\) already has the uid 'src'"
    ):
        src.uid("other")
    with pytest.raises(
        ValueError,
        match="set_parallelism: the step from_pandas\\(4 rows\\) already has parallelism 2",
    ):
        src.set_parallelism(2).set_parallelism(3)


def test_duplicate_uid_fails_at_plan(env, readings):
    src = env.from_pandas(readings).uid("step")
    src.filter(col("n") > 1).uid("step").print()
    with pytest.raises(ValueError) as info:
        plan_of(env)
    assert str(info.value) == (
        "plan: the uid 'step' is given to two steps, from_pandas(4 rows) (node 1) and "
        "filter(n > 1) (node 2); uids match state in savepoints and must be unique in a job"
    )


def test_duplicate_uid_on_steps_outside_the_plan_is_ignored(env, readings):
    src = env.from_pandas(readings).uid("a")
    src.filter(col("n") > 1).uid("a")  # leads to no sink
    src.print()
    assert [n.uid for n in plan_of(env).nodes] == ["a", ""]


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, ValueError, r"must be a positive integer \(1 to 32768\), got 0"),
        (-2, ValueError, r"must be a positive integer \(1 to 32768\), got -2"),
        (32769, ValueError, r"must be a positive integer \(1 to 32768\), got 32769"),
        (2.0, TypeError, r"must be a positive integer, got 2.0 \(of type float\)"),
        (True, TypeError, r"must be a positive integer, got True \(of type bool\)"),
        ("2", TypeError, r"must be a positive integer, got '2' \(of type str\)"),
        (None, TypeError, r"must be a positive integer, got None"),
    ],
)
def test_bad_parallelism(env, readings, value, error, message):
    df = env.from_pandas(readings)
    with pytest.raises(
        error, match=r"set_parallelism \(from_pandas\(4 rows\)\): parallelism " + message
    ):
        df.set_parallelism(value)
    with pytest.raises(error, match=message):
        df.print().set_parallelism(value)


def test_bad_uid(env, readings):
    with pytest.raises(TypeError, match="uid: expected a non-empty string, got ''"):
        env.from_pandas(readings).uid("")
    with pytest.raises(TypeError, match="uid: expected a non-empty string, got 3"):
        env.from_pandas(readings).print().uid(3)


# --- sinks ----------------------------------------------------------------------------------


def test_file_sinks(env, readings, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    df = env.from_pandas(readings)
    sinks = [
        df.print(),
        df.write_csv("out/csv"),
        df.write_jsonl(tmp_path / "j"),
        df.write_parquet("p"),
    ]
    assert [s.name for s in sinks] == [
        "print",
        "write_csv(out/csv)",
        f"write_jsonl({tmp_path / 'j'})",
        "write_parquet(p)",
    ]
    assert all(s.schema == df.schema for s in sinks)
    plan = plan_of(env)
    assert kinds(plan) == ["source", "sink", "sink", "sink", "sink"]
    sink_messages = [n.sink for n in plan.nodes[1:]]
    assert sink_messages[0].WhichOneof("kind") == "print"
    assert [(s.file.format, s.file.path) for s in sink_messages[1:]] == [
        (plan_pb2.FileSource.CSV, str(tmp_path / "out" / "csv")),
        (plan_pb2.FileSource.JSONL, str(tmp_path / "j")),
        (plan_pb2.FileSource.PARQUET, str(tmp_path / "p")),
    ]
    assert all(schema_of(n) == df.schema for n in plan.nodes[1:])
    assert not (tmp_path / "out").exists()  # building a plan writes nothing


def test_sink_errors(env, tmp_path):
    df = env.from_arrow(pa.table({"l": pa.array([[1, 2]])}))
    with pytest.raises(
        TypeError,
        match="write_csv: the column 'l' has the nested type list<item: int64>, which CSV "
        "cannot hold",
    ):
        df.write_csv(tmp_path / "out")
    existing = tmp_path / "file.txt"
    existing.write_text("x")
    with pytest.raises(FileExistsError, match="write_jsonl: '.*file.txt' is an existing file"):
        df.write_jsonl(existing)
    with pytest.raises(TypeError, match="write_parquet: expected a directory path"):
        df.write_parquet(None)
    assert env._sinks == []


# --- the plan as a whole --------------------------------------------------------------------


def test_plan_is_a_topologically_ordered_dag(env, readings):
    src = env.from_pandas(readings)
    hot = src.filter(col("temp") > 25)
    cold = src.filter(col("temp") <= 25).rebalance()
    both = hot.union(cold)
    both.key_by("sensor").agg(fg.count()).print()
    hot.write_parquet("/tmp/hot")
    src.with_column("unused", lit(1))  # leads to no sink: not in the plan
    plan = plan_of(env)
    assert [(n.id, n.name) for n in plan.nodes] == [
        (1, "from_pandas(4 rows)"),
        (2, "filter(temp > 25)"),
        (3, "filter(temp <= 25)"),
        (4, "union"),
        (5, "key_by(sensor).agg(count())"),
        (6, "print"),
        (7, "write_parquet(/tmp/hot)"),
    ]
    assert [edges(n) for n in plan.nodes] == [
        [],
        [(1, Kind.FORWARD_IMPLICIT, [])],
        [(1, Kind.FORWARD_IMPLICIT, [])],
        [(2, Kind.FORWARD_IMPLICIT, []), (3, Kind.REBALANCE, [])],
        [(4, Kind.HASH, ["sensor"])],
        [(5, Kind.FORWARD_IMPLICIT, [])],
        [(2, Kind.FORWARD_IMPLICIT, [])],
    ]
    for node in plan.nodes:
        assert all(i.node < node.id for i in node.inputs)
    assert schema_of(plan.nodes[4]) == pa.schema(
        [hot.schema.field("sensor"), ("count", pa.int64())]
    )


def test_plan_is_deterministic_and_serializes(env, readings):
    @udf("int64")
    def inc(x):
        return x + 1

    env.from_pandas(readings).with_column("m", inc(col("n"))).print()
    first, second = env.plan(), env.plan()
    assert first == second
    assert first.to_bytes() == second.to_bytes()
    parsed = fg.JobPlan(first.to_bytes())
    assert parsed == first
    assert [n.schema for n in parsed.nodes][-1].names == ["sensor", "temp", "n", "m"]
    message = plan_pb2.JobPlan.FromString(first.to_bytes())
    assert [schema_of(n) for n in message.nodes][-1].names == ["sensor", "temp", "n", "m"]


def test_plan_is_plain_python(readings):
    env = Environment(parallelism=3, config={"pipeline.forward-mismatch": "fail"})
    df = env.from_pandas(readings).uid("src")
    df.key_by("sensor").agg(fg.count()).print().set_parallelism(1)
    plan = env.plan("plain")
    assert isinstance(plan, fg.JobPlan)
    assert (plan.name, plan.default_parallelism, dict(plan.config)) == (
        "plain",
        3,
        {"pipeline.forward-mismatch": "fail"},
    )
    assert [(n.id, n.kind, n.uid, n.parallelism) for n in plan.nodes] == [
        (1, "source", "src", 0),
        (2, "keyed_aggregate", "", 0),
        (3, "sink", "", 1),
    ]
    assert plan.nodes[1].inputs == (fg.PlanInput(node=1, partitioning="HASH", keys=("sensor",)),)
    assert plan.nodes[2].inputs == (fg.PlanInput(node=2, partitioning="FORWARD_IMPLICIT"),)
    assert plan.nodes[2].schema.names == ["sensor", "count"]
    assert repr(plan) == "<JobPlan 'plain': 3 nodes>"
    with pytest.raises(TypeError):
        plan.config["x"] = "y"  # read-only


def test_long_pipelines_do_not_hit_the_recursion_limit(env):
    df = env.from_pandas(pd.DataFrame({"x": [1]}))
    for _ in range(sys.getrecursionlimit() + 100):
        df = df.filter(col("x") > 0)
    df.print()
    assert len(plan_of(env).nodes) == sys.getrecursionlimit() + 102


def test_plan_name_must_be_a_string(env, readings):
    env.from_pandas(readings).print()
    with pytest.raises(TypeError, match="plan: the job name must be a non-empty string"):
        env.plan(name="")


def test_reprs(env, readings):
    df = env.from_pandas(readings[["n"]])
    assert repr(df) == "<DataFrame from_pandas(4 rows) [n: int64]>"
    assert repr(df.rebalance()) == "<DataFrame from_pandas(4 rows) [n: int64] -> REBALANCE>"
    assert repr(df.key_by("n")) == "<KeyedDataFrame key_by(n)>"
    assert repr(df.print()) == "<Sink print>"
    assert repr(env) == "Environment(parallelism=None, config={}, endpoint=None, sinks=1)"


def test_long_names_are_shortened(env):
    df = env.from_pandas(pd.DataFrame({"x": ["a"]}))
    df.filter(col("x") == "y" * 500).print()
    name = plan_of(env).nodes[1].name
    assert len(name) == 200
    assert name.endswith("...")


def test_building_a_plan_needs_no_grpc_or_worker():
    code = (
        "import sys, flinkgo\n"
        "env = flinkgo.Environment()\n"
        "expr = flinkgo.col('x') + 1\n"
        "before = [m for m in ('grpc', 'google.protobuf', 'flinkgo._proto') if m in sys.modules]\n"
        "env.datagen(rows=1, schema={'x': 'int64'}).select(expr).print()\n"
        "plan = env.plan()\n"
        "after = [m for m in ('grpc', 'flinkgo.worker') if m in sys.modules]\n"
        "print(before, after, len(plan.nodes))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.strip() == "[] [] 3"


def test_read_csv_bad_value_in_first_block_names_line_and_column(env, tmp_path):
    # A value that does not convert is found at planning time, in the file's first
    # block: the message names its line and column as the runtime does past it.
    path = tmp_path / "amounts.csv"
    path.write_text('sensor,amount\na,1.5\n"b\nc",2\nd,xx\ne,3\n')
    with pytest.raises(ValueError) as info:
        env.read_csv(path, schema={"sensor": "string", "amount": "float64"})
    message = str(info.value)
    assert message.startswith(f"read_csv: '{path}' does not match the given schema")
    assert 'line 5, column "amount": cannot parse "xx" as double' in message
    assert "#1" not in message
