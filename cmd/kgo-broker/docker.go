package main

// kgo-broker docker-launch: the container image's entrypoint (docker/Dockerfile).
// It picks the server.properties the way Apache Kafka's image does in its launch
// script (KafkaDockerWrapper setup), without a shell:
//
//   - a mounted /mnt/shared/config/server.properties, with the KAFKA_* variables
//     applied on top (the image appends them to the copied file);
//   - else, with any KAFKA_* config variable, the variables alone;
//   - else the image's default file /etc/kafka/docker/server.properties.
//
// Then it runs the server as `kgo-broker [that file] [args...]`. The other
// subcommands (format, version, random-uuid, help) pass through unchanged, so
// `docker run IMAGE version` works; healthcheck checks the listener of the
// configuration the server resolved.

import (
	"fmt"
	"io"
	"os"

	"github.com/kgo-broker/kgo-broker/config"
)

// The image's configuration files, as in apache/kafka's image.
const (
	dockerDefaultConfig = "/etc/kafka/docker/server.properties"
	dockerMountedConfig = "/mnt/shared/config/server.properties"
)

func cmdDockerLaunch(args, env []string, stdout, stderr io.Writer) int {
	return dockerLaunch(args, env, dockerSecretsDir, stdout, stderr)
}

func dockerLaunch(args, env []string, secretsDir string, stdout, stderr io.Writer) int {
	file := dockerConfigFile(env, dockerDefaultConfig, dockerMountedConfig)
	if len(args) > 0 {
		switch args[0] {
		case "healthcheck":
			return cmdHealthcheck(args[1:], env, file, stdout, stderr)
		case "format", "random-uuid", "version", "--version", "help", "-h", "--help":
			return run(args, env, stdout, stderr)
		}
	}
	// The configure script's SSL and SASL steps (docker_secrets.go).
	env, err := dockerSecurityEnv(env, secretsDir, func(s string) { fmt.Fprintln(stdout, s) })
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// A server.properties given on the command line wins over the image's choice.
	if o, err := parseServeArgs(args, env); err == nil && o.File == "" && file != "" {
		args = append([]string{file}, args...)
	}
	return cmdServe(args, env, stdout, stderr)
}

// dockerConfigFile returns the server.properties the image uses: the mounted
// file if it exists, else none when a KAFKA_* config variable is set, else the
// default file if it exists.
func dockerConfigFile(env []string, defaultFile, mountedFile string) string {
	if dockerFileExists(mountedFile) {
		return mountedFile
	}
	if len(config.FromEnv(env)) > 0 {
		return ""
	}
	if dockerFileExists(defaultFile) {
		return defaultFile
	}
	return ""
}

func dockerFileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
