package search

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzBuildAnalyse checks that the numbered analysis of index builds gives
// the terms of the general path used by queries, in the same order.
func FuzzBuildAnalyse(f *testing.F) {
	for _, s := range []string{"createPullRequest to-do list", "HTTPServerError DSNs K8s PR", "get-file.contents don't",
		"a_b_c_d_e_f_g_h_i_j_k_l_m_n_o_p_q_r_s_t_u_v_w_x_y_z_1_2_3", "caf\u00e9 na\u00efve", "EC2 v1 _x_ x__y",
		"how-to The-And", strings.Repeat("Ab", 60), "id ID i'd prs PRs to-do", "x-\u00e9t\u00e9 a.\u00e9 \xff-b"} {
		f.Add(s)
	}
	b := newBuildAnalyser(0)
	f.Fuzz(func(t *testing.T, s string) {
		want := analyze(s, nil)
		for round := range 2 { // the second round reads what the first remembered
			for _, remember := range []bool{false, true} {
				var got []token
				for _, r := range b.analyse(s, nil, remember) {
					got = append(got, token{term: b.dict.terms[r.id], joined: r.joined})
				}
				if !slices.Equal(got, want) {
					t.Fatalf("round %d, remember %v: build analysis of %q = %v, general path %v", round, remember, s, got, want)
				}
			}
		}
	})
}

// TestWordTable fills a word table past several growths and finds every
// word again, and no word it was not given.
func TestWordTable(t *testing.T) {
	tab := newWordTable(0)
	word := func(i int) string { return strings.Repeat("x", i%17) + strconv.Itoa(i) }
	for i := range 5000 {
		w := word(i)
		if len(w) > maxTableWord {
			continue
		}
		k0, k1 := packWord(w)
		if _, ok := tab.lookup(k0, k1); ok {
			t.Fatalf("%q found before it was added", w)
		}
		tab.add(k0, k1, []termRef{{id: int32(i)}, {id: int32(len(w)), joined: true}})
	}
	for i := range 5000 {
		w := word(i)
		if len(w) > maxTableWord {
			continue
		}
		refs, ok := tab.lookup(packWord(w))
		if !ok || len(refs) != 2 || refs[0].id != int32(i) || refs[1].id != int32(len(w)) {
			t.Fatalf("%q: %v, %v", w, refs, ok)
		}
	}
}
