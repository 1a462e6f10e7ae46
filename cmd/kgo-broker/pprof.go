package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// KGO_PPROF_ADDR=host:port serves Go's net/http/pprof handlers
// (/debug/pprof/...) on that address, for profiling (bench/, make bench
// PROFILE=1). Off unless set; bind it to loopback: it is unauthenticated.
// Started from init so that main stays unchanged; a bad address is reported on
// stderr and the node runs without it.
func init() {
	addr := os.Getenv("KGO_PPROF_ADDR")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kgo-broker: KGO_PPROF_ADDR=%s: %v (pprof disabled)\n", addr, err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go http.Serve(ln, mux) //nolint:errcheck // lives as long as the process
}
