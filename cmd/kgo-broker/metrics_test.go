package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestListenMetrics(t *testing.T) {
	var stderr strings.Builder
	if ln := listenMetrics("", &stderr); ln != nil || stderr.Len() != 0 {
		t.Fatalf("unset: %v %q", ln, stderr.String())
	}
	if ln := listenMetrics("not-an-address", &stderr); ln != nil {
		t.Fatal("bad address bound")
	}
	if !strings.Contains(stderr.String(), "KGO_METRICS_ADDR=not-an-address") {
		t.Fatalf("stderr %q does not name the variable", stderr.String())
	}

	ln := listenMetrics("127.0.0.1:0", &stderr)
	if ln == nil {
		t.Fatal("no listener")
	}
	defer ln.Close()
	serveMetrics(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok 1\n") }))
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok 1\n" {
		t.Fatalf("body %q", b)
	}
}
