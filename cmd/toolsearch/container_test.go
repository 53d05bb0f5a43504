package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// dockerfileCommand returns the command line the repository's image runs
// by default: its ENTRYPOINT and CMD, both in JSON form.
func dockerfileCommand(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var entry, cmd []string
	for _, line := range strings.Split(string(b), "\n") {
		for prefix, dst := range map[string]*[]string{"ENTRYPOINT ": &entry, "CMD ": &cmd} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				if err := json.Unmarshal([]byte(rest), dst); err != nil {
					t.Fatalf("Dockerfile: %s is not in JSON form: %v", strings.TrimSpace(prefix), err)
				}
			}
		}
	}
	if len(entry) != 1 || entry[0] != "toolsearch" {
		t.Fatalf("Dockerfile: ENTRYPOINT %q, want toolsearch", entry)
	}
	return cmd
}

// deploymentCommand returns the arguments the Kubernetes Deployment's
// container runs the image's entry point with.
func deploymentCommand(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/kubernetes/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args    []string `yaml:"args"`
						Command []string `yaml:"command"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(b, &dep); err != nil {
		t.Fatalf("deployment.yaml: %v", err)
	}
	cs := dep.Spec.Template.Spec.Containers
	if len(cs) != 1 || len(cs[0].Command) != 0 {
		t.Fatalf("deployment.yaml: %d containers; want one that keeps the image's entry point", len(cs))
	}
	return cs[0].Args
}

// TestContainerCommandLines runs serve with the command lines of the image
// (Dockerfile CMD) and of the Kubernetes Deployment, with only the config
// path and the port changed: without a token each refuses to listen
// beyond loopback, as the Dockerfile says; with one each starts, and
// /healthz answers without the token, as a readiness probe asks it.
func TestContainerCommandLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolsearch.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(serveTestToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args func(*testing.T) []string
	}{
		{"Dockerfile", dockerfileCommand},
		{"deployment.yaml", deploymentCommand},
	} {
		line := tc.args(t)
		if len(line) < 1 || line[0] != "serve" {
			t.Fatalf("%s runs %q, want serve", tc.name, line)
		}
		args := slices.Clone(line[1:])
		for _, flag := range []string{"-c", "--http"} {
			i := slices.Index(args, flag)
			if i < 0 || i+1 >= len(args) {
				t.Fatalf("%s: %q has no %s", tc.name, line, flag)
			}
			if flag == "-c" {
				args[i+1] = cfg
			} else if !strings.HasPrefix(args[i+1], "0.0.0.0:") {
				t.Fatalf("%s: --http %s, want every interface (0.0.0.0)", tc.name, args[i+1])
			} else {
				args[i+1] = "0.0.0.0:0"
			}
		}
		args = append(args, "--state-dir", t.TempDir())

		t.Run(tc.name+", no token", func(t *testing.T) {
			t.Parallel()
			logs, exited, _ := startServe(t, args...)
			select {
			case code := <-exited:
				if code != exitUsage || !strings.Contains(logs.String(), "beyond loopback") {
					t.Errorf("exit %d, want %d saying it will not listen beyond loopback without a token:\n%s", code, exitUsage, logs.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("serve started without a token:\n%s", logs.String())
			}
		})
		t.Run(tc.name+", with a token", func(t *testing.T) {
			t.Parallel()
			logs, exited, _ := startServe(t, append(slices.Clone(args), "--auth-token-file", tokenFile)...)
			_, port, _ := net.SplitHostPort(waitAddr(t, logs, exited))
			client := &http.Client{Timeout: 10 * time.Second}
			for path, want := range map[string]int{"/healthz": http.StatusOK, "/metrics": http.StatusUnauthorized} {
				resp, err := client.Get("http://127.0.0.1:" + port + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("GET %s without the token: %d, want %d", path, resp.StatusCode, want)
				}
			}
		})
	}
}
