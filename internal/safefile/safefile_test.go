//go:build unix

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "config.json")
	if err := os.WriteFile(regular, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 2000), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil { // the file is built on unix only
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		wantErr    error
		wantText   string // in the error
	}{
		{"regular", regular, nil, ""},
		{"a link to a regular file", link, nil, ""},
		{"too large", big, ErrTooLarge, "larger than 1000 bytes"},
		{"a directory", dir, ErrNotRegular, "a directory"},
		{"a FIFO", fifo, ErrNotRegular, "named pipe"},
		{"/dev/zero", "/dev/zero", ErrNotRegular, "character device"},
		{"missing", filepath.Join(dir, "nope"), os.ErrNotExist, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			done := make(chan struct{})
			var data []byte
			var err error
			go func() {
				defer close(done)
				data, err = ReadFile(c.path, 1000)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadFile(%s) hangs", c.path)
			}
			if c.wantErr == nil {
				if err != nil || string(data) != `{"a":1}` {
					t.Fatalf("ReadFile = %q, %v", data, err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.wantText) || !strings.Contains(err.Error(), c.path) {
				t.Fatalf("ReadFile(%s) = %v, want %v saying %q and naming the path", c.path, err, c.wantErr, c.wantText)
			}
		})
	}
}
