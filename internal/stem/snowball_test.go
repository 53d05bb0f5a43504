package stem

// English replaces github.com/kljensen/snowball/english in the search
// index, whose stems must not change. These tests hold it to that library,
// which is a dependency of the tests only.

import (
	"strings"
	"testing"

	"github.com/kljensen/snowball/english"
)

// snowballStem is the library's stem of w with stop words left as they
// are, as the index stemmed before; ok is false when the library panics.
func snowballStem(w string) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return english.Stem(w, false), true
}

// sampleWords exercise every step, the regions, the special words and
// the odd inputs: case, space, apostrophes, digits and other scripts.
var sampleWords = []string{
	"caresses", "ponies", "ties", "cries", "cried", "tied", "gas", "gaps", "this", "kiwis", "bus", "class", "corpus",
	"agreed", "feed", "agreedly", "hoped", "hoping", "hopping", "luxuriated", "troubled", "sized", "bed", "shed",
	"shredded", "filing", "failing", "owed", "owing", "fizzed", "hissing", "exceedingly", "fixing", "snowing",
	"cry", "by", "say", "happy", "employ", "enjoy", "toy", "annoy", "yes", "layers", "sayings", "yelling",
	"relational", "conditional", "valenci", "hesitanci", "digitizer", "conformabli", "radicalli", "differentli",
	"vileli", "analogousli", "vietnamization", "predication", "operator", "feudalism", "decisiveness", "hopefulness",
	"callousness", "formaliti", "sensitiviti", "sensibiliti", "quickly", "analogy", "apology", "fluently", "lessly",
	"fearlessly", "hopefully", "triplicate", "formative", "formalize", "electriciti", "electrical", "hopeful",
	"goodness", "revival", "allowance", "inference", "airliner", "gyroscopic", "adjustable", "defensible",
	"irritant", "replacement", "adjustment", "dependent", "adoption", "communion", "activate", "angulariti",
	"homologous", "effective", "bowdlerize", "probate", "rate", "cease", "controll", "roll", "general", "generate",
	"generous", "communism", "community", "arsenal", "arsenic", "generalization", "skis", "skies", "dying", "lying",
	"tying", "idly", "gently", "ugly", "early", "only", "singly", "sky", "news", "howe", "atlas", "cosmos", "bias",
	"andes", "innings", "outings", "proceeded", "exceeding", "succeeds", "herrings", "earring", "having", "further",
	"yourselves", "against", "the", "a", "is", "it's", "dog's", "dogs'", "'quoted", "''", "'''", "’’’s", "dog’s",
	"'s'", "o'", "  Running  ", "CONNECTED", "Hopping\t", "café", "cafés", "naïvety", "résumés", "straße", "größten",
	"über", "идущий", "日本語です", "İstanbul", "ǅemal", "k8s", "v2", "ec2s", "3d", "123", "1st", "2nds", "a1b2c3",
	"x", "ab", "abc", "éa", "éy", "éies", "ébed", "aéy", "bye", "ayy", "yyy", "\u00a0word\u00a0", "\xff\xfe",
	"ab\xffing", "",
}

// TestEnglishMatchesSnowball compares English with the library on the
// sample words.
func TestEnglishMatchesSnowball(t *testing.T) {
	t.Parallel()
	for _, w := range sampleWords {
		want, ok := snowballStem(w)
		if !ok {
			continue
		}
		if got := English(w); got != want {
			t.Errorf("English(%q) = %q, the library gives %q", w, got, want)
		}
	}
}

// FuzzEnglishStem compares English with the library on any input; where
// the library panics, English must still return.
func FuzzEnglishStem(f *testing.F) {
	for _, w := range sampleWords {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w string) {
		got := English(w)
		want, ok := snowballStem(w)
		if ok && got != want {
			t.Errorf("English(%q) = %q, the library gives %q", w, got, want)
		}
	})
}

// benchWords are words as the index meets them: lower-case, mostly
// inflected or derived.
var benchWords = strings.Fields(`repositories repository connected connection searching list files
creates pull requests issues comments reviewers merged branches deployment kubernetes clusters namespaces
running containers images registries webhooks notifications subscriptions payments invoices customers
generalization operational analytics dashboards queries results filtering sorted paginated timestamps`)

// BenchmarkEnglish stems benchWords with English and with the library.
func BenchmarkEnglish(b *testing.B) {
	for _, bc := range []struct {
		name string
		stem func(string) string
	}{
		{"own", English},
		{"snowball", func(w string) string { return english.Stem(w, false) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, w := range benchWords {
					bc.stem(w)
				}
			}
		})
	}
}
