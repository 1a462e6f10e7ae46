package main

// kgo-broker healthcheck: the container image's HEALTHCHECK. An image built FROM
// scratch has no shell, nc or kafka-broker-api-versions.sh, so the binary checks
// itself: it sends one ApiVersions request to a listener of the local node and
// exits 0 when the answer has error code 0, else 1.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
)

const healthcheckUsage = `Usage: kgo-broker healthcheck [host:port] [-c server.properties] [--timeout 5s]

Sends an ApiVersions request and exits 0 if the node answers without error, else 1.
Without host:port it checks the node's own first broker listener (the first
controller listener on a controller-only node), resolved from server.properties and
KAFKA_* variables as the server resolves them, on localhost when the listener binds
every interface.
`

// cmdHealthcheck is `kgo-broker healthcheck`. file is the server.properties the
// server would use when -c is not given ("" for none).
func cmdHealthcheck(args, env []string, file string, stdout, stderr io.Writer) int {
	addr := ""
	timeout := 5 * time.Second
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, bool) {
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "kgo-broker healthcheck: %s needs a value\n\n%s", a, healthcheckUsage)
				return "", false
			}
			i++
			return args[i], true
		}
		switch a {
		case "-c", "--config":
			v, ok := value()
			if !ok {
				return 2
			}
			file = v
		case "--timeout":
			v, ok := value()
			if !ok {
				return 2
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				fmt.Fprintf(stderr, "kgo-broker healthcheck: invalid --timeout %q\n", v)
				return 2
			}
			timeout = d
		case "-h", "--help":
			fmt.Fprint(stdout, healthcheckUsage)
			return 0
		default:
			if addr != "" || (len(a) > 0 && a[0] == '-') {
				fmt.Fprintf(stderr, "kgo-broker healthcheck: unexpected argument %q\n\n%s", a, healthcheckUsage)
				return 2
			}
			addr = a
		}
	}
	if addr == "" {
		cfg, err := config.Load(config.LoadOptions{File: file, Env: env})
		if err != nil {
			fmt.Fprintf(stderr, "kgo-broker healthcheck: %v\n", err)
			return 1
		}
		if addr, err = healthcheckAddr(cfg); err != nil {
			fmt.Fprintf(stderr, "kgo-broker healthcheck: %v\n", err)
			return 1
		}
	}
	n, err := apiVersionsCheck(addr, timeout)
	if err != nil {
		fmt.Fprintf(stderr, "kgo-broker healthcheck: %s: %v\n", addr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok (ApiVersions lists %d APIs)\n", addr, n)
	return 0
}

// healthcheckAddr is the address of the node's own first plaintext broker
// listener (controller listener on a controller-only node), with an empty or
// wildcard host replaced by localhost.
func healthcheckAddr(cfg *config.Config) (string, error) {
	isController := func(l config.Listener) bool { return slices.Contains(cfg.ControllerListenerNames, l.Name) }
	var candidates []config.Listener
	for _, l := range cfg.Listeners {
		if cfg.ProcessRoles.IsBroker() != isController(l) {
			candidates = append(candidates, l)
		}
	}
	for _, l := range candidates {
		if l.SecurityProtocol != "PLAINTEXT" && l.SecurityProtocol != "SASL_PLAINTEXT" {
			continue // ApiVersions over TLS is not attempted
		}
		host := l.Host
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		return net.JoinHostPort(host, strconv.Itoa(int(l.Port))), nil
	}
	return "", errors.New("no PLAINTEXT or SASL_PLAINTEXT listener to check; pass host:port")
}

// apiVersionsCheck sends ApiVersions v3 to addr and returns the number of APIs
// in a successful answer.
func apiVersionsCheck(addr string, timeout time.Duration) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "kgo-broker-healthcheck"
	req.ClientSoftwareVersion = version
	const correlationID = 0x6b676f31
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo-broker-healthcheck"))
	if _, err := conn.Write(f.AppendRequest(nil, req, correlationID)); err != nil {
		return 0, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return 0, fmt.Errorf("reading response: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return 0, fmt.Errorf("bad response size %d", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return 0, fmt.Errorf("reading response: %w", err)
	}
	// ApiVersions responses always use response header v0: the correlation id only.
	if got := binary.BigEndian.Uint32(body); got != correlationID {
		return 0, fmt.Errorf("response correlation id %d, want %d", got, correlationID)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = req.Version
	if err := resp.ReadFrom(body[4:]); err != nil {
		// A broker that does not support v3 answers UNSUPPORTED_VERSION in v0 form.
		resp = kmsg.NewPtrApiVersionsResponse()
		if err0 := resp.ReadFrom(body[4:]); err0 != nil {
			return 0, fmt.Errorf("decoding ApiVersions response: %w", err)
		}
	}
	if resp.ErrorCode != 0 {
		return 0, fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	if len(resp.ApiKeys) == 0 {
		return 0, errors.New("ApiVersions response lists no APIs")
	}
	return len(resp.ApiKeys), nil
}
