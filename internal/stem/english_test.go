package stem

import "testing"

// TestPrepare checks the preparation of a word: apostrophes, the y that
// acts as a consonant (Y), and where the letters start in the text.
func TestPrepare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		start    int
	}{
		{"youth", "Youth", 0},
		{"boy", "boY", 0},
		{"boyish", "boYish", 0},
		{"flying", "flying", 0},
		{"syzygy", "syzygy", 0},
		{"sayyid", "saYyid", 0},
		{"'quoted", "quoted", 1},
		{"''twas", "twas", 2},
		{"dog’s", "dog's", 0},
		{"‘tis", "tis", 3},
		{"'''", "'", 2},
		{"’’", "'", 3},
	}
	for _, tc := range tests {
		w, start := prepare(nil, tc.in)
		if got := string(w.s); got != tc.want || start != tc.start {
			t.Errorf("prepare(%q) = %q from byte %d, want %q from byte %d", tc.in, got, start, tc.want, tc.start)
		}
	}
}

// TestRegions checks where R1 and R2 start, including the words whose R1
// follows a fixed prefix.
func TestRegions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		r1, r2 int
	}{
		{"beautiful", 5, 7},
		{"beauty", 5, 6},
		{"beau", 4, 4},
		{"animadversion", 2, 4},
		{"sprinkled", 5, 9},
		{"eucharist", 3, 6},
		{"generous", 5, 8},
		{"generate", 5, 7},
		{"communism", 6, 8},
		{"arsenal", 5, 7},
		{"gene", 3, 4},
		{"café", 3, 4}, // é is a consonant
	}
	for _, tc := range tests {
		w, _ := prepare(nil, tc.in)
		if w.r1 != tc.r1 || w.r2 != tc.r2 {
			t.Errorf("%q: R1 at %d, R2 at %d; want %d, %d", tc.in, w.r1, w.r2, tc.r1, tc.r2)
		}
	}
}

// TestSteps runs each step alone on prepared words.
func TestSteps(t *testing.T) {
	t.Parallel()
	steps := map[string]func(*word){
		"0": (*word).step0, "1a": (*word).step1a, "1b": (*word).step1b, "1c": (*word).step1c,
		"2": (*word).step2, "3": (*word).step3, "4": (*word).step4, "5": (*word).step5,
	}
	tests := []struct{ step, in, want string }{
		{"0", "dog's", "dog"},
		{"0", "dogs'", "dogs"},
		{"0", "dog's'", "dog"},
		{"0", "dog", "dog"},

		{"1a", "caresses", "caress"},
		{"1a", "ponies", "poni"},
		{"1a", "ties", "tie"},
		{"1a", "cried", "cri"},
		{"1a", "tied", "tie"},
		{"1a", "cats", "cat"},
		{"1a", "gaps", "gap"},
		{"1a", "kiwis", "kiwi"},
		{"1a", "gas", "gas"},
		{"1a", "this", "this"},
		{"1a", "bus", "bus"},
		{"1a", "class", "class"},

		{"1b", "agreed", "agree"},
		{"1b", "feed", "feed"}, // eed is not in R1
		{"1b", "hoped", "hope"},
		{"1b", "hopping", "hop"},
		{"1b", "luxuriated", "luxuriate"},
		{"1b", "troubled", "trouble"},
		{"1b", "sized", "size"},
		{"1b", "filing", "file"},
		{"1b", "failing", "fail"},
		{"1b", "owed", "owe"},
		{"1b", "snowing", "snow"},
		{"1b", "fixing", "fix"},
		{"1b", "hissing", "hiss"},
		{"1b", "exceedingly", "exceed"},
		{"1b", "bed", "bed"},
		{"1b", "bled", "bled"},

		{"1c", "cry", "cri"},
		{"1c", "happy", "happi"},
		{"1c", "by", "by"},
		{"1c", "say", "saY"},
		{"1c", "employ", "emploY"},

		{"2", "relational", "relate"},
		{"2", "conditional", "condition"},
		{"2", "rational", "rational"}, // ational is not in R1, and tional is not tried
		{"2", "valenci", "valence"},
		{"2", "hesitanci", "hesitance"},
		{"2", "digitizer", "digitize"},
		{"2", "conformabli", "conformable"},
		{"2", "radicalli", "radical"},
		{"2", "differentli", "different"},
		{"2", "vietnamization", "vietnamize"},
		{"2", "predication", "predicate"},
		{"2", "operator", "operate"},
		{"2", "feudalism", "feudal"},
		{"2", "decisiveness", "decisive"},
		{"2", "hopefulness", "hopeful"},
		{"2", "callousness", "callous"},
		{"2", "formaliti", "formal"},
		{"2", "sensitiviti", "sensitive"},
		{"2", "sensibiliti", "sensible"},
		{"2", "visibli", "visible"},
		{"2", "fearlessli", "fearless"},
		{"2", "hopefulli", "hopeful"},
		{"2", "analogi", "analog"},
		{"2", "strategi", "strategi"},
		{"2", "quickli", "quick"},
		{"2", "holli", "holli"}, // li after l stays

		{"3", "sensational", "sensate"},
		{"3", "traditional", "tradition"},
		{"3", "formalize", "formal"},
		{"3", "triplicate", "triplic"},
		{"3", "electriciti", "electric"},
		{"3", "electrical", "electric"},
		{"3", "hopeful", "hope"},
		{"3", "goodness", "good"},
		{"3", "demonstrative", "demonstr"},
		{"3", "formative", "formative"}, // ative is in R1, not in R2

		{"4", "revival", "reviv"},
		{"4", "allowance", "allow"},
		{"4", "inference", "infer"},
		{"4", "airliner", "airlin"},
		{"4", "gyroscopic", "gyroscop"},
		{"4", "adjustable", "adjust"},
		{"4", "defensible", "defens"},
		{"4", "irritant", "irrit"},
		{"4", "replacement", "replac"},
		{"4", "adjustment", "adjust"},
		{"4", "dependent", "depend"},
		{"4", "adoption", "adopt"},
		{"4", "communion", "communion"}, // ion is not in R2
		{"4", "homologous", "homolog"},
		{"4", "effective", "effect"},
		{"4", "bowdlerize", "bowdler"},
		{"4", "activate", "activ"},
		{"4", "angulariti", "angular"},
		{"4", "agreement", "agreement"}, // ement is not in R2, and ent is not tried

		{"5", "probate", "probat"},
		{"5", "rate", "rate"},
		{"5", "bake", "bake"},
		{"5", "cease", "ceas"},
		{"5", "conceive", "conceiv"},
		{"5", "controll", "control"},
		{"5", "roll", "roll"},
		{"5", "saY", "say"},
	}
	for _, tc := range tests {
		w, _ := prepare(nil, tc.in)
		steps[tc.step](&w)
		if got := string(w.s); got != tc.want {
			t.Errorf("step %s of %q = %q, want %q", tc.step, tc.in, got, tc.want)
		}
	}
}

// TestEnglish checks whole stems: the steps in turn, the words left as
// they are, and the text around the word.
func TestEnglish(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"running", "run"},
		{"connections", "connect"},
		{"repositories", "repositori"},
		{"generalization", "general"},
		{"  Running  ", "run"},
		{"CONNECTED", "connect"},
		{"dog’s", "dog"},
		{"'''", ""},
		{"skies", "sky"},
		{"innings", "inning"},
		{"proceeded", "proceed"},
		{"news", "news"},
		{"having", "having"}, // a stop word
		{"ab", "ab"},
		{"Ab", "ab"},
		{"", ""},
		{"cafés", "café"},
	}
	for _, tc := range tests {
		if got := English(tc.in); got != tc.want {
			t.Errorf("English(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestEnglishAllocations checks that a stem that starts the word it came
// from is returned without an allocation, and any other with one.
func TestEnglishAllocations(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{
		{"connected", 0},
		{"happy", 1},
	} {
		if n := testing.AllocsPerRun(100, func() { English(tc.in) }); n != tc.want {
			t.Errorf("English(%q) allocates %.0f times, want %.0f", tc.in, n, tc.want)
		}
	}
}
