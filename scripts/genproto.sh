#!/usr/bin/env bash
# Regenerates the committed Go and Python code of every protocol:
#   udf/bridge/proto/worker.proto (+ goplugin/)  the worker protocol, beside the bridge
#   runtime/proto/{plan,job}.proto               the job plan and the job service
# The Python modules (python/flinkgo/_proto) come with .pyi type stubs for mypy.
#
#   scripts/genproto.sh            write into the tree (make proto)
#   scripts/genproto.sh --check    fail when the committed code is stale (make proto-check)
#
# Needs: Go (the protoc plugins are go.mod tools, so their versions are pinned
# there) and a Python with grpcio-tools at the version below (it ships protoc).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
want_tools=$(sed -n 's/^grpcio-tools==//p' scripts/genproto-requirements.txt)
have_tools=$("$python" -c 'import importlib.metadata as m; print(m.version("grpcio-tools"))' 2>/dev/null || true)
if [ "$have_tools" != "$want_tools" ]; then
  echo "genproto.sh: need grpcio-tools==$want_tools in $python (have '${have_tools:-none}'): pip install -r scripts/genproto-requirements.txt" >&2
  exit 2
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/bin" "$out/go" "$out/py"
go build -o "$out/bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "$out/bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc

"$python" -m grpc_tools.protoc -I udf/bridge/proto -I runtime/proto \
  --plugin=protoc-gen-go="$out/bin/protoc-gen-go" \
  --plugin=protoc-gen-go-grpc="$out/bin/protoc-gen-go-grpc" \
  --go_out="$out/go" --go_opt=paths=source_relative \
  --go-grpc_out="$out/go" --go-grpc_opt=paths=source_relative \
  --go_opt=Mworker.proto=github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb \
  --go_opt=Mplan.proto=github.com/flinkgo/flinkgo/runtime/proto/planpb \
  --go_opt=Mjob.proto=github.com/flinkgo/flinkgo/runtime/proto/jobpb \
  --go-grpc_opt=Mworker.proto=github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb \
  --go-grpc_opt=Mplan.proto=github.com/flinkgo/flinkgo/runtime/proto/planpb \
  --go-grpc_opt=Mjob.proto=github.com/flinkgo/flinkgo/runtime/proto/jobpb \
  worker.proto plan.proto job.proto
"$python" -m grpc_tools.protoc -I udf/bridge/proto -I runtime/proto -I udf/bridge/proto/goplugin \
  --python_out="$out/py" --pyi_out="$out/py" --grpc_python_out="$out/py" \
  worker.proto plan.proto job.proto grpc_controller.proto grpc_stdio.proto health.proto
# grpc_tools writes top-level imports; the modules (and their .pyi type stubs) live
# inside flinkgo._proto.
sed -i -E "s/^import ([a-z_]+_pb2) as /from . import \\1 as /" "$out"/py/*.py "$out"/py/*.pyi
touch "$out/py/__init__.py"

# One Go package per proto file.
mkdir -p "$out/gopkg/workerpb" "$out/gopkg/planpb" "$out/gopkg/jobpb"
mv "$out"/go/worker*.go "$out/gopkg/workerpb/"
mv "$out"/go/plan*.go "$out/gopkg/planpb/"
mv "$out"/go/job*.go "$out/gopkg/jobpb/"

py_dir=python/flinkgo/_proto
if [ "${1:-}" = "--check" ]; then
  stale=0
  diff -r "$out/gopkg/workerpb" udf/bridge/proto/workerpb >&2 || stale=1
  for pkg in planpb jobpb; do
    diff -r "$out/gopkg/$pkg" "runtime/proto/$pkg" >&2 || stale=1
  done
  diff -r "$out/py" "$py_dir" >&2 || stale=1
  if [ $stale = 1 ]; then
    echo "genproto.sh: committed protocol code is stale; run make proto and commit" >&2
    exit 1
  fi
  echo "protocol code is up to date"
  exit 0
fi
rm -rf udf/bridge/proto/workerpb
cp -r "$out/gopkg/workerpb" udf/bridge/proto/workerpb
for pkg in planpb jobpb; do
  rm -rf "runtime/proto/$pkg"
  cp -r "$out/gopkg/$pkg" "runtime/proto/$pkg"
done
rm -rf "$py_dir"
mkdir -p "$py_dir"
cp "$out"/py/* "$py_dir"/
echo "wrote udf/bridge/proto/workerpb, runtime/proto/{planpb,jobpb} and $py_dir"
