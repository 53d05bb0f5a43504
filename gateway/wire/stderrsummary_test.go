package wire

import (
	"strings"
	"testing"
)

func TestStderrSummary(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, stderr, want string
	}{
		{"node CommonJS module missing", `node:internal/modules/cjs/loader:1210
  throw err;
  ^

Error: Cannot find module '/srv/x/dist/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)
    at Module._load (node:internal/modules/cjs/loader:1038:27)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2`, "Error: Cannot find module '/srv/x/dist/index.js' | code: 'MODULE_NOT_FOUND', | requireStack: [] | } | Node.js v20.20.2"},
		{"node ES module missing", `node:internal/modules/esm/resolve:283
    throw new ERR_MODULE_NOT_FOUND(
          ^

Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/a.mjs' imported from /b.mjs
    at finalizeResolution (node:internal/modules/esm/resolve:283:11) {
  code: 'ERR_MODULE_NOT_FOUND',
}`, "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/a.mjs' imported from /b.mjs | code: 'ERR_MODULE_NOT_FOUND', | }"},
		{"python traceback", `Traceback (most recent call last):
  File "/srv/server.py", line 4, in <module>
    main()
  File "/srv/server.py", line 3, in main
    raise ValueError('no API key')
          ^^^^^^^^^^^^^^^^^^^^^^^^
ValueError: no API key`, "ValueError: no API key"},
		{"go panic", "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\t/x/main.go:5 +0x25\nexit status 2", "panic: boom | exit status 2"},
		{"plain lines keep the last ones", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10", "3 | 4 | 5 | 6 | 7 | 8 | 9 | 10"},
		{"the error line stays first when much follows", "Error: bad\n" + strings.Repeat("more\n", 12) + "last",
			"Error: bad | more | more | more | more | more | more | last"},
		{"a usage message", "usage: server --root DIR\nerror: --root is required", "error: --root is required"},
		{"empty", "  \n\n", ""},
		{"nothing but frames", "    at a (x.js:1:1)\n    at b (x.js:2:2)", "at a (x.js:1:1) | at b (x.js:2:2)"},
		// A hostile server's stderr, as much as the tail keeps: bounded.
		{"many error lines", strings.Repeat("Error: x\n", 500) + "Error: last", "Error: last"},
		{"one huge line", strings.Repeat("e", 4096), strings.Repeat("e", 4096)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := StderrSummary(c.stderr); got != c.want {
				t.Errorf("stderrSummary =\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}
