package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// schemaLocation is where kubeconform finds a kind's schema in the folder
// $KUBECONFORM_SCHEMAS names: the file names of kubeschema (and of the
// published kubernetes-json-schema folders).
const schemaLocation = "{{.ResourceKind}}{{.KindSuffix}}.json"

// kubeconformReport is the part of kubeconform's -output json read here.
type kubeconformReport struct {
	Resources []struct {
		Filename, Kind, Status, Msg string
	}
	Summary struct {
		Valid, Invalid, Errors, Skipped int
	}
}

// kubeconform runs kubeconform -strict over the folder dir, with the
// schemas of $KUBECONFORM_SCHEMAS, skipping the test where either is
// missing.
func kubeconform(t *testing.T, dir string) kubeconformReport {
	t.Helper()
	bin, err := exec.LookPath("kubeconform")
	if err != nil {
		t.Skip("kubeconform is not on PATH (.ci/run installs it)")
	}
	schemas := os.Getenv("KUBECONFORM_SCHEMAS")
	if schemas == "" {
		t.Skip("$KUBECONFORM_SCHEMAS names no folder of Kubernetes schemas (.ci/run makes one with deploy/kubeschema)")
	}
	cmd := exec.Command(bin, "-strict", "-summary", "-output", "json",
		"-ignore-filename-pattern", "kustomization.yaml",
		"-schema-location", filepath.Join(schemas, schemaLocation), dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep kubeconformReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("kubeconform: %v (%v); stdout %q, stderr %q", err, runErr, stdout.String(), stderr.String())
	}
	if (rep.Summary.Invalid+rep.Summary.Errors > 0) != (runErr != nil) {
		t.Errorf("kubeconform exited with %v for a summary of %+v", runErr, rep.Summary)
	}
	return rep
}

// TestManifestsMatchKubernetesSchemas checks the manifests against the
// Kubernetes API's own schemas, strictly (no field the API does not
// define, no duplicated key).
func TestManifestsMatchKubernetesSchemas(t *testing.T) {
	t.Parallel()
	rep := kubeconform(t, "kubernetes")
	if s := rep.Summary; s.Valid != 4 || s.Invalid+s.Errors+s.Skipped != 0 {
		t.Errorf("kubeconform: %+v, want the 4 resources valid and none skipped", s)
	}
	for _, r := range rep.Resources {
		t.Errorf("%s: %s %s: %s", r.Filename, r.Kind, r.Status, r.Msg)
	}
}

// TestKubeconformCatchesMistakes breaks one manifest at a time and
// checks that kubeconform, with these schemas, refuses it: a check that
// passed everything would show nothing.
func TestKubeconformCatchesMistakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"a misspelt field", "deployment.yaml", "  replicas: 3\n", "  replica: 3\n", "'replica' not allowed"},
		{"a number as text", "deployment.yaml", "  replicas: 3\n", "  replicas: three\n", "/spec/replicas"},
		{"a port by name where a number goes", "service.yaml", "port: 7777", "port: mcp", "/spec/ports/0/port"},
		{"a budget as a list", "pdb.yaml", "maxUnavailable: 1", "maxUnavailable: [1]", "/spec/maxUnavailable"},
		{"a key twice", "configmap.yaml", "data:\n", "data:\n  extra: one\n  extra: two\n", "extra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(filepath.Join("kubernetes", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(src, []byte(tc.old)) {
				t.Fatalf("%s no longer holds %q: change the test with the manifest", tc.file, tc.old)
			}
			dir := t.TempDir()
			broken := bytes.Replace(src, []byte(tc.old), []byte(tc.new), 1)
			if err := os.WriteFile(filepath.Join(dir, tc.file), broken, 0o644); err != nil {
				t.Fatal(err)
			}
			rep := kubeconform(t, dir)
			if s := rep.Summary; s.Invalid+s.Errors != 1 || s.Valid != 0 {
				t.Fatalf("kubeconform: %+v, want the broken resource refused", s)
			}
			if msg := rep.Resources[0].Msg; !strings.Contains(msg, tc.want) {
				t.Errorf("kubeconform says %q, want it to name %q", msg, tc.want)
			}
		})
	}
}
