//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestKcat checks librdkafka's view of the broker: kcat -L (metadata), -P
// (produce, uncompressed and snappy, with headers) and -C (consume to the end).
func TestKcat(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-kcat"
	createTopic(t, b, topic, 1, nil)
	run := func(stdin string, args ...string) ToolResult {
		t.Helper()
		r := RunCommand(t, RunOpts{Timeout: 60 * time.Second, Stdin: stdin}, kcat, append([]string{"-b", b.Addr}, args...)...)
		if r.ExitCode != 0 {
			t.Fatalf("kcat failed:\n%s", r)
		}
		return r
	}

	// -L: one broker, this one, and the topic with its partition led by broker 1.
	r := run("", "-L", "-t", topic)
	for _, want := range []string{
		" 1 brokers:\n",
		fmt.Sprintf("  broker 1 at 127.0.0.1:%d", b.Port),
		fmt.Sprintf("  topic \"%s\" with 1 partitions:\n", topic),
		"    partition 0, leader 1, replicas: 1, isrs: 1\n",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("kcat -L output lacks %q:\n%s", want, r)
		}
	}

	// -P: keyed records with a header, once plain and once snappy-compressed.
	var in, want strings.Builder
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
		fmt.Fprintf(&want, "k%d=v%d;hdr=plain\n", i, i)
	}
	run(in.String(), "-P", "-t", topic, "-p", "0", "-K", ":", "-H", "hdr=plain")
	in.Reset()
	for i := 5; i < 10; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
		fmt.Fprintf(&want, "k%d=v%d;hdr=snappy\n", i, i)
	}
	run(in.String(), "-P", "-t", topic, "-p", "0", "-K", ":", "-H", "hdr=snappy", "-z", "snappy")

	// -C from the beginning, exit at the end of the partition.
	r = run("", "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k=%s;%h\n")
	if r.Stdout != want.String() {
		t.Errorf("kcat -C:\n got %q\nwant %q\n%s", r.Stdout, want.String(), r)
	}

	// -C at an offset, with offsets printed.
	r = run("", "-C", "-t", topic, "-p", "0", "-o", "7", "-c", "2", "-e", "-q", "-f", "%o:%k\n")
	if got, want := r.Stdout, "7:k7\n8:k8\n"; got != want {
		t.Errorf("kcat -C -o 7 -c 2 = %q, want %q", got, want)
	}
}
