package builtins

// SpecialForms lists the special forms with a line for the docs; ref marks
// those the language reference lists for the model.
var SpecialForms = []struct {
	Name, Doc string
	ref       bool
}{
	{"do", "evaluates the forms in order; the value of the last", true},
	{"if", "(if test then else?): then when test is truthy, else else (nil)", true},
	{"if-not", "(if-not test then else?): if with the test negated", true},
	{"when", "(when test body...): the body when test is truthy, else nil", true},
	{"when-not", "(when-not test body...): the body when test is falsy", true},
	{"cond", "(cond test expr ...): the expr of the first truthy test; :else as the last test", true},
	{"case", "(case x const expr ... default?): the expr of the constant equal to x", true},
	{"condp", "(condp pred x a expr ... default?): the expr of the first a with (pred a x)", true},
	{"if-let", "(if-let [name expr] then else?): then with name bound when expr is truthy", true},
	{"when-let", "(when-let [name expr] body...): the body with name bound when expr is truthy", true},
	{"if-some", "(if-some [name expr] then else?): then with name bound when expr is not nil", true},
	{"when-some", "(when-some [name expr] body...): the body with name bound when expr is not nil", true},
	{"when-first", "(when-first [x coll] body...): the body with x the first item when coll is not empty", false},
	{"let", "(let [name expr ...] body...): the body with the names bound (destructuring allowed)", true},
	{"letfn", "(letfn [(f [args] body) ...] body...): local functions that may call each other", true},
	{"fn", "(fn name? [params] body...): a function; several ([params] body) for several arities", true},
	{"defn", "(defn name [params] body...): defines a function in memory", true},
	{"defn-", "same as defn", false},
	{"def", "(def name expr): stores a value in memory under name", true},
	{"defonce", "(defonce name expr): def unless name is already defined", true},
	{"loop", "(loop [name init ...] body...): a loop; recur starts the next iteration", true},
	{"recur", "(recur args...): jumps back to the enclosing loop or fn with new values", true},
	{"and", "the first falsy value, or the last value", true},
	{"or", "the first truthy value, or the last value", true},
	{"->", "threads a value as the first argument through the forms", true},
	{"->>", "threads a value as the last argument through the forms", true},
	{"some->", "-> that stops at nil", true},
	{"some->>", "->> that stops at nil", true},
	{"as->", "(as-> x name forms...): threads a value bound to name through the forms", true},
	{"cond->", "(cond-> x test form ...): threads x through each form whose test is truthy", true},
	{"cond->>", "cond-> threading as the last argument", true},
	{"for", "(for [x coll :when test :let [...] ...] expr): a vector of expr for each combination", true},
	{"doseq", "(doseq [x coll ...] body...): runs the body for each combination, for effects; nil", true},
	{"quote", "(quote form) or 'form: the form as data", false},
	{"comment", "ignores its forms; nil", false},
	{"where", "(where :field) or (where :field op value): a predicate on a record's field (op: = not= > < >= <= includes in)", true},
	{"call", "(call \"name\" args): calls the tool name", false},
}
