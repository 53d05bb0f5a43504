// Package deploy holds the Kubernetes manifests of a toolsearch service
// of several replicas (kubernetes/) and the test that checks they agree
// with each other and with the gateway: the ConfigMap is a configuration
// the gateway reads, with a cluster; the probes, ports and mounts are the
// ones serve uses. kubeconform checks them against the Kubernetes API's
// schemas (kubeconform_test.go), which kubeschema makes.
package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/gateway/config"
	"go.yaml.in/yaml/v3"
)

// manifests reads every document of kubernetes/*.yaml by kind.
func manifests(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kind, _ := doc["kind"].(string)
			if kind == "" || doc["apiVersion"] == nil {
				t.Fatalf("%s: a document without kind or apiVersion", f)
			}
			if kind == "Kustomization" {
				continue
			}
			if name := str(doc, "metadata", "name"); name != "toolsearch" {
				t.Errorf("%s: %s is named %q, want toolsearch", f, kind, name)
			}
			if out[kind] != nil {
				t.Fatalf("two %ss", kind)
			}
			out[kind] = doc
		}
	}
	for _, k := range []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget"} {
		if out[k] == nil {
			t.Errorf("no %s among the manifests", k)
		}
	}
	return out
}

// at walks maps by key and lists by index ("0").
func at(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := int(p[0] - '0')
			if len(p) != 1 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func str(v any, path ...string) string {
	s, _ := at(v, path...).(string)
	return s
}

func TestManifestsAgree(t *testing.T) {
	t.Parallel()
	m := manifests(t)
	dep, svc, pdb, cm := m["Deployment"], m["Service"], m["PodDisruptionBudget"], m["ConfigMap"]
	if dep == nil || svc == nil || pdb == nil || cm == nil {
		t.FailNow()
	}
	labels := at(dep, "spec", "selector", "matchLabels").(map[string]any)
	tmpl := at(dep, "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range labels {
		if tmpl[k] != v {
			t.Errorf("the pods lack the Deployment's selector label %s=%v", k, v)
		}
		if at(svc, "spec", "selector", k) != v {
			t.Errorf("the Service does not select %s=%v", k, v)
		}
		if at(pdb, "spec", "selector", "matchLabels", k) != v {
			t.Errorf("the PodDisruptionBudget does not select %s=%v", k, v)
		}
	}
	replicas, _ := at(dep, "spec", "replicas").(int)
	if unavailable, _ := at(pdb, "spec", "maxUnavailable").(int); replicas < 2 || unavailable < 1 || unavailable >= replicas {
		t.Errorf("replicas %d, maxUnavailable %d: want two or more replicas and a budget that keeps some", replicas, unavailable)
	}

	c := at(dep, "spec", "template", "spec", "containers", "0")
	var args []string
	for _, a := range at(c, "args").([]any) {
		args = append(args, a.(string))
	}
	if args[0] != "serve" {
		t.Fatalf("the container runs %v, want serve", args)
	}
	flag := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("the container's args %v lack %s", args, name)
		}
		return args[i+1]
	}
	listen, cfgPath := flag("--http"), flag("-c")
	port := at(c, "ports", "0", "containerPort").(int)
	portName := str(c, "ports", "0", "name")
	if !strings.HasSuffix(listen, ":"+strconv.Itoa(port)) || strings.HasPrefix(listen, "127.") || strings.HasPrefix(listen, ":") {
		t.Errorf("serve listens on %s, the container port is %d: want every interface on that port", listen, port)
	}
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		if p := str(c, probe, "httpGet", "path"); p != "/healthz" {
			t.Errorf("%s checks %q, want /healthz", probe, p)
		}
		if p := at(c, probe, "httpGet", "port"); p != portName && p != port {
			t.Errorf("%s checks port %v, want %s", probe, p, portName)
		}
	}
	if tp := at(svc, "spec", "ports", "0", "targetPort"); tp != portName && tp != port {
		t.Errorf("the Service sends to %v, want %s", tp, portName)
	}
	if grace, _ := at(dep, "spec", "template", "spec", "terminationGracePeriodSeconds").(int); grace < 15 {
		t.Errorf("terminationGracePeriodSeconds %d leaves no room for the drain (shutdownTimeout 10s)", grace)
	}
	if ro, _ := at(c, "securityContext", "readOnlyRootFilesystem").(bool); !ro {
		t.Error("the root filesystem is writable")
	}

	// The config the pods mount is the ConfigMap's, at the path serve reads.
	mounted := false
	for _, vm := range at(c, "volumeMounts").([]any) {
		if filepath.Join(str(vm, "mountPath"), "toolsearch.json") == cfgPath && str(vm, "name") == "config" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("no volume named config is mounted where -c %s reads", cfgPath)
	}
	env := map[string]string{}
	for _, e := range at(c, "env").([]any) {
		env[str(e, "name")] = "from-the-secret-0123456789-0123456789"
	}
	for _, v := range []string{config.RedisPasswordEnv, config.ClusterKeyEnv} {
		if _, ok := env[v]; !ok {
			t.Errorf("the pods get no $%s", v)
		}
	}
	text := str(cm, "data", "toolsearch.json")
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.Parse("configmap.yaml", []byte(text), lookup)
	if err != nil {
		t.Fatalf("the ConfigMap's configuration: %v", err)
	}
	g := cfg.Gateway
	if g.Cluster.Key == "" {
		t.Error("the replicas get no cluster key: they would share no manifest, index, hints or learned usage")
	}
	if !g.Cluster.On() || g.Serve.AuthToken == "" || g.Cluster.Password == "" {
		t.Errorf("the ConfigMap's configuration: cluster %v, token %v, Redis password %v; want all three",
			g.Cluster.On(), g.Serve.AuthToken != "", g.Cluster.Password != "")
	}
	if g.Cluster.Replica == "" {
		t.Error("no replica name")
	}
}
