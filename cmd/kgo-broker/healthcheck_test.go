package main

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
)

// fakeApiVersions serves one connection at a time: it reads a request and
// answers ApiVersions with errorCode (v3 body, header v0).
func fakeApiVersions(t *testing.T, errorCode int16) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			func() {
				defer c.Close()
				var size [4]byte
				if _, err := io.ReadFull(c, size[:]); err != nil {
					return
				}
				req := make([]byte, binary.BigEndian.Uint32(size[:]))
				if _, err := io.ReadFull(c, req); err != nil {
					return
				}
				r := kbin.Reader{Src: req}
				key, ver, corr := r.Int16(), r.Int16(), r.Int32()
				if key != 18 || ver != 3 {
					t.Errorf("request key %d version %d, want ApiVersions v3", key, ver)
				}
				resp := kmsg.NewPtrApiVersionsResponse()
				resp.Version = 3
				resp.ErrorCode = errorCode
				if errorCode == 0 {
					resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
				}
				body := kbin.AppendInt32(nil, corr)
				body = resp.AppendTo(body)
				c.Write(append(kbin.AppendInt32(nil, int32(len(body))), body...)) //nolint:errcheck
			}()
		}
	}()
	return ln.Addr().String()
}

func runHealthcheck(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(append([]string{"healthcheck"}, args...), nil, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHealthcheckOK(t *testing.T) {
	addr := fakeApiVersions(t, 0)
	code, out, errOut := runHealthcheck(addr, "--timeout", "2s")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestHealthcheckErrorCode(t *testing.T) {
	addr := fakeApiVersions(t, 35) // UNSUPPORTED_VERSION
	code, _, errOut := runHealthcheck(addr)
	if code != 1 || !strings.Contains(errOut, "error code 35") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestHealthcheckNothingListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, _, errOut := runHealthcheck(addr, "--timeout", "1s")
	if code != 1 || !strings.Contains(errOut, addr) {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestHealthcheckClosedWithoutAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
	}()
	if code, _, errOut := runHealthcheck(ln.Addr().String(), "--timeout", "2s"); code != 1 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestHealthcheckBadArgs(t *testing.T) {
	for _, args := range [][]string{{"--timeout"}, {"--timeout", "x"}, {"a:1", "b:2"}, {"--bogus"}} {
		if code, _, _ := runHealthcheck(args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// Without an address the listener comes from the configuration, as the server
// resolves it: -c file, then KAFKA_* variables.
func TestHealthcheckAddrFromConfig(t *testing.T) {
	addr := fakeApiVersions(t, 0)
	_, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	content := "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:19093\n" +
		"listeners=CONTROLLER://:19093,PLAINTEXT://:" + port + "\ncontroller.listener.names=CONTROLLER\n" +
		"log.dirs=" + filepath.Join(dir, "data") + "\n"
	if err := os.WriteFile(props, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"healthcheck", "-c", props}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.HasPrefix(out.String(), "localhost:"+port+": ok") {
		t.Fatalf("stdout %q", out.String())
	}
}

func TestHealthcheckAddr(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, "localhost:9092"}, // the single-node defaults
		{map[string]string{"listeners": "CONTROLLER://:9093,PLAINTEXT://0.0.0.0:19092"}, "localhost:19092"},
		{map[string]string{"listeners": "PLAINTEXT://kgo1:9092,CONTROLLER://:9093"}, "kgo1:9092"},
		{map[string]string{"process.roles": "controller", "listeners": "CONTROLLER://:9093", "advertised.listeners": ""}, "localhost:9093"},
	} {
		props := config.SingleNodeDefaults()
		for k, v := range tc.props {
			if v == "" {
				delete(props, k)
			} else {
				props[k] = v
			}
		}
		cfg, err := config.New(props)
		if err != nil {
			t.Fatalf("%v: %v", tc.props, err)
		}
		got, err := healthcheckAddr(cfg)
		if err != nil || got != tc.want {
			t.Errorf("%v: got %q, %v; want %q", tc.props, got, err, tc.want)
		}
	}
}

func TestDockerConfigFile(t *testing.T) {
	dir := t.TempDir()
	def, mounted := filepath.Join(dir, "default.properties"), filepath.Join(dir, "mounted.properties")
	kafkaEnv := []string{"KAFKA_NODE_ID=1"}
	otherEnv := []string{"CLUSTER_ID=x", "KAFKA_HEAP_OPTS=-Xmx1G", "KAFKA_BOOTSTRAP_SERVERS=b:9092", "PATH=/bin"}

	if got := dockerConfigFile(otherEnv, def, mounted); got != "" {
		t.Errorf("no files: %q", got)
	}
	if err := os.WriteFile(def, []byte("node.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := dockerConfigFile(otherEnv, def, mounted); got != def {
		t.Errorf("no KAFKA_* config variable: %q, want the default file", got)
	}
	if got := dockerConfigFile(kafkaEnv, def, mounted); got != "" {
		t.Errorf("KAFKA_* variable: %q, want none (the variables alone)", got)
	}
	if err := os.WriteFile(mounted, []byte("node.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, env := range [][]string{otherEnv, kafkaEnv} {
		if got := dockerConfigFile(env, def, mounted); got != mounted {
			t.Errorf("%v with a mounted file: %q", env, got)
		}
	}
}

func TestDockerLaunchPassesSubcommands(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"docker-launch", "version"}, nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "kgo-broker ") {
		t.Fatalf("exit %d, %q %q", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"docker-launch", "random-uuid"}, nil, &out, &errb); code != 0 || len(strings.TrimSpace(out.String())) != 22 {
		t.Fatalf("exit %d, %q", code, out.String())
	}
	// A bad KAFKA_* variable stops the server with its name.
	out.Reset()
	errb.Reset()
	code := run([]string{"docker-launch"}, []string{"KAFKA_NODE_ID=1", "KAFKA_NUM_PARTITIONS=abc"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "KAFKA_NUM_PARTITIONS") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
