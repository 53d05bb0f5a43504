package wire

import (
	"os"
	"runtime"
	"sort"
	"strings"
)

// A stdio server does not inherit the gateway's whole environment, which
// holds the secrets of every other server (tokens the configuration reads
// with ${VAR}) and the gateway's own. It gets what any program needs to
// run, node and npx included (baseEnv), the variables its configuration
// passes through by name (envPassthrough), and its configured env on top.

// baseEnv are the variables every stdio server gets from the gateway's
// environment, when set: the search path, the user and home, locale and
// terminal, temporary and per-user directories, the TLS trust settings
// node honours, and on Windows what programs there need to start. LC_*
// variables pass too.
var baseEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "LANG", "LANGUAGE",
	"TMPDIR", "TMP", "TEMP",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR",
	// Windows.
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "OS",
	"USERPROFILE", "USERNAME", "USERDOMAIN", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA",
	"PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)", "PROGRAMW6432", "COMMONPROGRAMFILES", "COMMONPROGRAMFILES(X86)",
	"NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE",
}

// serverEnviron returns the environment of a stdio server: the variables
// of environ (the gateway's, as "NAME=value") named by baseEnv or LC_*, or
// matched by one of passthrough's patterns (a name, a prefix ending in
// "*", or "*" for all), then extra on top. The result is sorted by name.
func serverEnviron(environ []string, passthrough []string, extra map[string]string) []string {
	fold := runtime.GOOS == "windows" // names are case-insensitive there
	key := func(name string) string {
		if fold {
			return strings.ToUpper(name)
		}
		return name
	}
	base := map[string]bool{}
	for _, n := range baseEnv {
		base[n] = true
	}
	passes := func(name string) bool {
		if base[strings.ToUpper(name)] && (fold || name == strings.ToUpper(name)) {
			return true
		}
		if strings.HasPrefix(name, "LC_") {
			return true
		}
		for _, p := range passthrough {
			if prefix, ok := strings.CutSuffix(p, "*"); ok {
				if strings.HasPrefix(key(name), key(prefix)) {
					return true
				}
			} else if key(name) == key(p) {
				return true
			}
		}
		return false
	}
	out := map[string]string{} // key → NAME=value
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !passes(name) {
			continue
		}
		out[key(name)] = kv
	}
	for k, v := range extra {
		out[key(k)] = k + "=" + v
	}
	env := make([]string, 0, len(out))
	for _, kv := range out {
		env = append(env, kv)
	}
	sort.Strings(env)
	return env
}

// Environ returns the environment of a stdio server started by the gateway:
// serverEnviron of the gateway's own environment, with the variables that
// passthrough names and extra on top.
func Environ(passthrough []string, extra map[string]string) []string {
	return serverEnviron(os.Environ(), passthrough, extra)
}
