package search

import (
	"slices"
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
