package clients

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/responses"
)

// missingRequired lists the fields of v, an openai-go response type, that
// the type marks api:"required" and that the JSON it was decoded from
// lacked (or held with the wrong type), descending into nested structs,
// slices and unions (through their AsAny).
func missingRequired(v reflect.Value, path string) []string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice:
		var out []string
		for i := range v.Len() {
			out = append(out, missingRequired(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Struct:
	default:
		return nil
	}
	if !v.CanAddr() {
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		v = c
	}
	if m := v.Addr().MethodByName("AsAny"); m.IsValid() && strings.HasSuffix(v.Type().Name(), "Union") {
		return missingRequired(m.Call(nil)[0], path)
	}
	meta := v.FieldByName("JSON")
	if !meta.IsValid() {
		return nil
	}
	var out []string
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "JSON" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		where := path + "." + name
		if fm := meta.FieldByName(f.Name); fm.IsValid() {
			field, _ := fm.Interface().(respjson.Field)
			api := f.Tag.Get("api")
			// Required means present: the API sends some required
			// fields as null (error, incomplete_details).
			switch raw := field.Raw(); {
			case strings.Contains(api, "required") && raw == "":
				out = append(out, where+" is missing")
				continue
			case raw == "" || raw == "null":
				continue // absent or null: nothing inside to check
			case !field.Valid():
				out = append(out, where+" is of the wrong type: "+raw)
				continue
			}
		}
		out = append(out, missingRequired(v.Field(i), where)...)
	}
	return out
}

// TestResponsesStandinSpeaksTheSDKsTypes reads what the Responses stand-in
// answers with openai-go v3.98.0, streaming and not, and checks that every
// event and the response hold every field the SDK's types require, and
// the values the scripted model gave.
func TestResponsesStandinSpeaksTheSDKsTypes(t *testing.T) {
	t.Parallel()
	st := newResponsesStandin(t, func(r *respRequest) []any {
		return []any{respText("Looking it up."), respCall{Namespace: "mcp__gw", Name: "search_tools", Arguments: `{"query":"select:memory__create_entities"}`}}
	})
	client := openai.NewClient(option.WithBaseURL(st.URL+"/v1"), option.WithAPIKey("sk-standin"), option.WithMaxRetries(0))
	params := responses.ResponseNewParams{Model: "gpt-standin", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hello")}}
	check := func(t *testing.T, r *responses.Response) {
		t.Helper()
		if bad := missingRequired(reflect.ValueOf(r), "response"); len(bad) > 0 {
			t.Errorf("the response lacks what the SDK requires: %v", bad)
		}
		if r.Status != "completed" || len(r.Output) != 2 {
			t.Fatalf("status %q, %d output items", r.Status, len(r.Output))
		}
		if msg := r.Output[0].AsMessage(); len(msg.Content) != 1 || msg.Content[0].AsOutputText().Text != "Looking it up." {
			t.Errorf("message %+v", msg)
		}
		call := r.Output[1].AsFunctionCall()
		if call.Name != "search_tools" || call.Namespace != "mcp__gw" || call.Arguments != `{"query":"select:memory__create_entities"}` || call.CallID == "" {
			t.Errorf("function call %+v", call)
		}
		if r.OutputText() != "Looking it up." || r.Usage.TotalTokens == 0 {
			t.Errorf("output text %q, usage %+v", r.OutputText(), r.Usage)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t.Run("json", func(t *testing.T) {
		r, err := client.Responses.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		check(t, r)
	})
	t.Run("stream", func(t *testing.T) {
		stream := client.Responses.NewStreaming(ctx, params)
		var types []string
		var done *responses.Response
		args := ""
		for stream.Next() {
			ev := stream.Current()
			types = append(types, ev.Type)
			if bad := missingRequired(reflect.ValueOf(ev.AsAny()), ev.Type); len(bad) > 0 {
				t.Errorf("event %s lacks what the SDK requires: %v", ev.Type, bad)
			}
			switch e := ev.AsAny().(type) {
			case responses.ResponseFunctionCallArgumentsDeltaEvent:
				args += e.Delta
			case responses.ResponseCompletedEvent:
				done = &e.Response
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		want := "response.created response.in_progress " +
			"response.output_item.added response.content_part.added response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
			"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done response.completed"
		if got := strings.Join(types, " "); got != want {
			t.Errorf("events:\n%s\nwant:\n%s", got, want)
		}
		if args != `{"query":"select:memory__create_entities"}` {
			t.Errorf("argument deltas add up to %q", args)
		}
		if done == nil {
			t.Fatal("no response.completed")
		}
		check(t, done)
	})
	t.Run("refusals", func(t *testing.T) {
		cases := []struct {
			name   string
			params responses.ResponseNewParams
			want   string
		}{
			{"no model", responses.ResponseNewParams{Input: params.Input}, "Missing required parameter: 'model'"},
			{"an output answering no call", responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String("call_nowhere"),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("ok")}}}}}}, "No tool call found for function call output with call_id call_nowhere"},
		}
		for _, c := range cases {
			_, err := client.Responses.New(ctx, c.params)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, c.want) || apiErr.Type != "invalid_request_error" {
				t.Errorf("%s: error %v, want a 400 saying %q", c.name, err, c.want)
			}
		}
	})
}
