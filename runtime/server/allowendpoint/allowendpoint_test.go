package allowendpoint

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	l, err := New([]string{"kafka-1.internal:9092", "Broker.Example", "https://minio.internal:9000", "[::1]:9093"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{"kafka-1.internal:9092", "KAFKA-1.internal:9092", "broker.example:1", "broker.example:9092",
		"https://minio.internal:9000", "http://minio.internal:9000/", "[::1]:9093", "https://broker.example"} {
		if err := l.Check("the endpoint", ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, refused := range []string{"kafka-1.internal:9093", "kafka-2.internal:9092", "127.0.0.1:9092", "http://169.254.169.254",
		"https://minio.internal", "minio.internal:9001", "[::1]:9092", "localhost", "http://user:pw@broker.example:80"} {
		err := l.Check("the endpoint", refused)
		if err == nil {
			t.Errorf("%s allowed", refused)
			continue
		}
		if !strings.Contains(err.Error(), refused) {
			t.Errorf("%s: the error does not name it: %v", refused, err)
		}
	}
	err = l.Check("read_kafka's bootstrap server", "10.0.0.1:9092")
	if err == nil || !strings.Contains(err.Error(), "--allow-endpoint 10.0.0.1:9092") || !strings.Contains(err.Error(), "kafka-1.internal:9092, Broker.Example") {
		t.Errorf("the refusal does not say what is allowed and which flag allows it: %v", err)
	}
}

func TestNoneAnyAndBadEntries(t *testing.T) {
	none, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := none.Check("x", "h:1"); err == nil || !strings.Contains(err.Error(), "no endpoint") {
		t.Errorf("an empty list allowed h:1 or said nothing useful: %v", err)
	}
	for _, l := range []*List{Any(), must(New([]string{"h:1", "*"})), nil} {
		if err := l.Check("x", "anything:1"); err != nil {
			t.Errorf("%v refused: %v", l, err)
		}
	}
	for _, bad := range []string{"", "h:", "a b", "https://", "host:port:x", "user@host:1"} {
		if _, err := New([]string{bad}); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func must(l *List, err error) *List {
	if err != nil {
		panic(err)
	}
	return l
}
