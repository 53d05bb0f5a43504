package evaluate
import ("context";"testing";"github.com/toolsearch/toolsearch/search")
func BenchmarkScratchBuild(b *testing.B){ snap,_:=loadShared(b); for i:=0;i<b.N;i++{ search.Build(snap) } }
func BenchmarkScratchQuery(b *testing.B){ snap,qs:=loadShared(b); ix:=search.Build(snap); b.ResetTimer(); for i:=0;i<b.N;i++{ ix.Search(context.Background(), search.Request{Query:qs[i%len(qs)].Query}) } }
