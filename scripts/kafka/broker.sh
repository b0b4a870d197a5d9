#!/usr/bin/env bash
# A real Kafka broker for the tests: Apache Kafka in KRaft mode (one process that
# is both broker and controller), from the jars of Maven Central on a Java 17+
# runtime. The Go tests (integration/testkit/kafka.go) and the Python tests
# (python/tests/conftest.py) start it through this script; they pick the ports,
# wait until it answers and kill it at the end.
#
#   broker.sh install        install what is missing (Java from Debian, Maven) and
#                            fetch the jars (`make setup` runs this)
#   broker.sh jars           fetch the jars if not cached; print their directory
#   broker.sh run DIR PORT CONTROLLER_PORT
#                            format DIR as the broker's storage and run the broker
#                            in the foreground (exec: the caller's process is Java's)
#
# The jars are cached in $FLINKGO_KAFKA_HOME (default ~/.cache/flinkgo/kafka-VERSION),
# listed by scripts/kafka/pom.xml and copied there by `mvn dependency:copy-dependencies`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pom="$here/pom.xml"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")"
home="${FLINKGO_KAFKA_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/flinkgo/kafka-$version}"
libs="$home/libs"
# The pom's content is part of the cache key: another dependency list fetches anew.
stamp="$libs/.complete-$(sha256sum "$pom" | cut -c1-16)"

die() {
	echo "kafka broker: $*" >&2
	exit 1
}

# apt_install PACKAGE...: Debian's packages, as root or through sudo.
apt_install() {
	command -v apt-get >/dev/null || die "cannot install $* without apt-get: install a Java 17+ runtime and Maven, then run again"
	local sudo=""
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null || die "installing $* needs root (or sudo)"
		sudo=sudo
	fi
	echo "kafka broker: installing $* from Debian's packages" >&2
	$sudo apt-get update -qq >&2 || true
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >&2
}

# java_ok: a java of version 17 or later is on PATH.
java_ok() {
	command -v java >/dev/null || return 1
	local v
	v="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
	[ -n "$v" ] && [ "${v%%.*}" -ge 17 ]
}

install_tools() {
	java_ok || apt_install openjdk-17-jre-headless
	command -v mvn >/dev/null || apt_install maven
	java_ok || die "no Java 17+ runtime after installing openjdk-17-jre-headless"
}

fetch_jars() {
	if [ -e "$stamp" ]; then
		return
	fi
	command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch the Kafka jars: run \`make setup\` (or scripts/kafka/broker.sh install)"
	mkdir -p "$home"
	# Another process may fetch at the same time (two test packages): one at a time.
	exec 9>"$home/.lock"
	flock 9
	if [ ! -e "$stamp" ]; then
		local tmp
		tmp="$(mktemp -d "$home/libs.XXXXXX")"
		echo "kafka broker: fetching Kafka $version jars with Maven into $libs" >&2
		if ! mvn -B -q -Dstyle.color=never -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
			-DoutputDirectory="$tmp" >&2; then
			rm -rf "$tmp"
			die "Maven could not fetch the Kafka jars (see above)"
		fi
		rm -rf "$libs"
		mv "$tmp" "$libs"
		touch "$stamp"
	fi
	exec 9>&-
}

run_broker() {
	local dir="$1" port="$2" cport="$3"
	java_ok || die "a Java 17+ runtime is needed to run the Kafka broker: run \`make setup\` (or scripts/kafka/broker.sh install)"
	fetch_jars
	mkdir -p "$dir/data"
	cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
# One broker: every internal topic has one replica, and few partitions start fast.
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Tests create their topics: reading a missing one is an error, not a new topic.
auto.create.topics.enable=false
EOF
	cat >"$dir/log4j2.properties" <<EOF
appender.file.type=File
appender.file.name=file
appender.file.fileName=$dir/server.log
appender.file.layout.type=PatternLayout
appender.file.layout.pattern=[%d] %p %m (%c)%n
rootLogger.level=INFO
rootLogger.appenderRef.file.ref=file
logger.kafka.name=org.apache.kafka
logger.kafka.level=WARN
EOF
	local jvm=(-Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
		"-Dlog4j2.configurationFile=$dir/log4j2.properties" "-Dkafka.logs.dir=$dir")
	local cluster
	cluster="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
	java "${jvm[@]}" -cp "$libs/*" kafka.tools.StorageTool format --standalone \
		-t "$cluster" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
		die "formatting the storage failed: $(cat "$dir/format.log")"
	exec java "${jvm[@]}" -cp "$libs/*" kafka.Kafka "$dir/server.properties"
}

case "${1:-}" in
install)
	install_tools
	fetch_jars
	echo "$libs"
	;;
jars)
	fetch_jars
	echo "$libs"
	;;
run)
	[ $# -eq 4 ] || die "usage: broker.sh run DIR PORT CONTROLLER_PORT"
	run_broker "$2" "$3" "$4"
	;;
*)
	die "usage: broker.sh install | jars | run DIR PORT CONTROLLER_PORT"
	;;
esac
