package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
)

// KGO_METRICS_ADDR=host:port serves the node's Prometheus metrics on
// http://host:port/metrics (broker/metrics.go lists them). Off unless set; it
// is unauthenticated, like KGO_PPROF_ADDR. An environment variable and not a
// config key: Kafka has no key for this (it exposes JMX), and the config
// package rejects unknown keys. The address is bound when the server's node is
// built (newNode), not from init as pprof's: other subcommands run with the
// same environment (the image's HEALTHCHECK runs `kgo-broker healthcheck`
// beside the server) and must not try to bind it too. A bad address is
// reported on stderr and the node runs without metrics.

// listenMetrics binds addr; nil when addr is "" or cannot be bound (said on
// stderr, naming the variable).
func listenMetrics(addr string, stderr io.Writer) net.Listener {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "kgo-broker: KGO_METRICS_ADDR=%s: %v (metrics disabled)\n", addr, err)
		return nil
	}
	return ln
}

// serveMetrics serves h at /metrics on ln, if any, for the rest of the
// process.
func serveMetrics(ln net.Listener, h http.Handler) {
	if ln == nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	go http.Serve(ln, mux) //nolint:errcheck // lives as long as the process
}
