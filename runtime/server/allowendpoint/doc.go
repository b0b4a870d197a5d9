// Package allowendpoint checks the network endpoints that a server's
// clients name (Kafka bootstrap servers of read_kafka and write_kafka, the
// s3.endpoint of checkpoints and savepoints) against those the server's
// operator allowed (--allow-endpoint), so that a client cannot make the
// server connect where the server can but the client should not (services
// on its loopback or private network, another tenant's broker).
//
// An entry is host:port, a host (any port), a URL (its host and port; a
// URL without a port allows any port) or "*" (any endpoint). Hosts are
// compared as written, case aside: a name is not resolved, so allow the
// names the clients use. A Kafka cluster's other brokers, which its
// bootstrap servers advertise, are the allowed cluster's own.
//
// This package must not depend on the job service or the runtime.
package allowendpoint
