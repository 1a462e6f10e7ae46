//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestConsoleProduceConsume writes keyed records with headers through
// kafka-console-producer.sh, reads them back with kafka-console-consumer.sh, and
// asks kafka-get-offsets.sh for the end offset.
func TestConsoleProduceConsume(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-console"
	const n = 10
	createTopic(t, b, topic, 1, nil)

	// LineMessageReader with parse.headers and parse.key: "h1:v1,h2:v2<TAB>key:value".
	var in, want strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "h1:a%d,h2:b%d\tkey%d:value %d\n", i, i, i, i)
		// DefaultMessageFormatter with print.headers and print.key: headers, key and
		// value separated by TABs, headers as k:v joined by ','.
		fmt.Fprintf(&want, "h1:a%d,h2:b%d\tkey%d\tvalue %d\n", i, i, i, i)
	}
	// kafka-console-producer.sh: acks=-1 and idempotence are the producer defaults.
	// (4.4 deprecates --property in favour of --reader-property / --formatter-property.)
	MustKafkaTool(t, RunOpts{Stdin: in.String()}, "kafka-console-producer.sh",
		"--bootstrap-server", b.Addr, "--topic", topic,
		"--reader-property", "parse.key=true",
		"--reader-property", "key.separator=:",
		"--reader-property", "parse.headers=true",
	)

	r := MustKafkaTool(t, RunOpts{}, "kafka-console-consumer.sh",
		"--bootstrap-server", b.Addr, "--topic", topic,
		"--partition", "0", "--offset", "earliest", "--max-messages", fmt.Sprint(n),
		"--timeout-ms", "30000",
		"--formatter-property", "print.key=true",
		"--formatter-property", "print.headers=true",
	)
	if r.Stdout != want.String() {
		t.Errorf("kafka-console-consumer.sh output:\n got %q\nwant %q\n%s", r.Stdout, want.String(), r)
	}
	if !strings.Contains(r.Stderr, fmt.Sprintf("Processed a total of %d messages", n)) {
		t.Errorf("kafka-console-consumer.sh: want 'Processed a total of %d messages' on stderr:\n%s", n, r)
	}

	// kafka-get-offsets.sh: latest offset by default.
	r = MustKafkaTool(t, RunOpts{}, "kafka-get-offsets.sh", "--bootstrap-server", b.Addr, "--topic", topic)
	if got, want := r.Stdout, fmt.Sprintf("%s:0:%d\n", topic, n); got != want {
		t.Errorf("kafka-get-offsets.sh = %q, want %q\n%s", got, want, r)
	}
	// --time -2: earliest.
	r = MustKafkaTool(t, RunOpts{}, "kafka-get-offsets.sh", "--bootstrap-server", b.Addr, "--topic", topic, "--time", "-2")
	if got, want := r.Stdout, topic+":0:0\n"; got != want {
		t.Errorf("kafka-get-offsets.sh --time -2 = %q, want %q\n%s", got, want, r)
	}
}
