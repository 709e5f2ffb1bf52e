// kubevirt-validate: reads multi-document YAML files and decodes every document strictly into
// KubeVirt's own API type kubevirt.io/api/core/v1.VirtualMachine: unknown fields are errors
// (DisallowUnknownFields), and since a type with its own UnmarshalJSON decodes its part without
// that flag, the VM is also encoded again and every field of the document must be there with its
// value (a field the types do not know is dropped, and so found). Prints each decoded VM as one
// JSON line, exits 1 on the first document that does not decode. Used by
// crates/cli/tests/plan_emit_orchestrators.rs.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func documents(text string) []string {
	var docs []string
	var cur []string
	flush := func() {
		body := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = nil
		for _, l := range strings.Split(body, "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				docs = append(docs, body)
				return
			}
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimRight(line, " ") == "---" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

func check(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for i, doc := range documents(string(raw)) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return fmt.Errorf("%s: document %d: not YAML: %v", path, i+1, err)
		}
		dec := json.NewDecoder(bytes.NewReader(js))
		dec.DisallowUnknownFields()
		var vm v1.VirtualMachine
		if err := dec.Decode(&vm); err != nil {
			return fmt.Errorf("%s: document %d: not a kubevirt.io/v1 VirtualMachine: %v", path, i+1, err)
		}
		if vm.APIVersion != "kubevirt.io/v1" || vm.Kind != "VirtualMachine" {
			return fmt.Errorf("%s: document %d: apiVersion %q kind %q", path, i+1, vm.APIVersion, vm.Kind)
		}
		out, err := json.Marshal(&vm)
		if err != nil {
			return err
		}
		var in, kept interface{}
		if err := json.Unmarshal(js, &in); err != nil {
			return err
		}
		if err := json.Unmarshal(out, &kept); err != nil {
			return err
		}
		if where := missing(in, kept, ""); where != "" {
			return fmt.Errorf("%s: document %d: %s: not a field of kubevirt.io/v1 VirtualMachine (or its value changed)", path, i+1, where)
		}
		fmt.Println(string(out))
	}
	return nil
}

// missing returns the path of the first value of doc that kept lacks or holds differently ("" if
// none): maps are compared key by key, lists item by item, other values by equality.
func missing(doc, kept interface{}, at string) string {
	switch d := doc.(type) {
	case map[string]interface{}:
		k, ok := kept.(map[string]interface{})
		if !ok {
			return at
		}
		for key, value := range d {
			if where := missing(value, k[key], at+"."+key); where != "" {
				return where
			}
		}
	case []interface{}:
		k, ok := kept.([]interface{})
		if !ok || len(k) != len(d) {
			return at
		}
		for i := range d {
			if where := missing(d[i], k[i], fmt.Sprintf("%s[%d]", at, i)); where != "" {
				return where
			}
		}
	default:
		if fmt.Sprint(doc) != fmt.Sprint(kept) {
			return at
		}
	}
	return ""
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kubevirt-validate FILE.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := check(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
