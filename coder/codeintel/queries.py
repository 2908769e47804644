"""Tag queries per language: which nodes define a symbol and which are references.

Our own queries rather than the `tags.scm` files the grammar wheels ship, because we need things those files
do not give: a kind for every definition (struct, trait, impl, constant...), the receiver of a Go method and
the scope of a C++ `A::b` definition (for qualified names like `Model.save`), and references that cover every
identifier use (so "find references" works for variables and attributes too, not only calls).

Conventions: a definition pattern captures the whole definition as `@def.<kind>` and its name as `@name`;
an optional `@scope` capture gives an explicit qualifier (Go receivers). Earlier patterns win when two match
the same name node. References are identifier nodes of the types in REFERENCE_TYPES (see `names.py`).
"""

from __future__ import annotations

_JS_DEFS = """
(class_declaration name: (_) @name) @def.class
(class name: (_) @name) @def.class
(method_definition name: (_) @name) @def.method
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(variable_declarator name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @def.function
(pair key: (property_identifier) @name value: [(arrow_function) (function_expression)]) @def.function
(assignment_expression left: (member_expression property: (property_identifier) @name)
  right: [(arrow_function) (function_expression)]) @def.function
(program (lexical_declaration (variable_declarator name: (identifier) @name) @def.constant))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @def.constant)))
"""

_TS_DEFS = _JS_DEFS + """
(abstract_class_declaration name: (_) @name) @def.class
(interface_declaration name: (_) @name) @def.interface
(type_alias_declaration name: (_) @name) @def.type
(enum_declaration name: (_) @name) @def.enum
(internal_module name: (_) @name) @def.module
(module name: (_) @name) @def.module
(method_signature name: (_) @name) @def.method
(abstract_method_signature name: (_) @name) @def.method
(function_signature name: (_) @name) @def.function
"""

_C_DECLARATORS = """
(function_definition declarator: (function_declarator declarator: (_) @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (_) @name)))
  @def.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator
  declarator: (function_declarator declarator: (_) @name)))) @def.function
(declaration declarator: (function_declarator declarator: (identifier) @name)) @def.prototype
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))
  @def.prototype
(struct_specifier name: (_) @name body: (_)) @def.struct
(union_specifier name: (_) @name body: (_)) @def.struct
(enum_specifier name: (_) @name body: (_)) @def.enum
(type_definition declarator: (type_identifier) @name) @def.type
(preproc_def name: (identifier) @name) @def.macro
(preproc_function_def name: (identifier) @name) @def.macro
"""

_CPP_DEFS = _C_DECLARATORS + """
(function_definition declarator: (reference_declarator (function_declarator declarator: (_) @name))) @def.function
(field_declaration declarator: (function_declarator declarator: (_) @name)) @def.method
(class_specifier name: (_) @name body: (_)) @def.class
(namespace_definition name: (_) @name) @def.namespace
(alias_declaration name: (_) @name) @def.type
"""

DEFINITIONS: dict[str, str] = {
    "python": """
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name) @def.constant))
""",
    "javascript": _JS_DEFS,
    "typescript": _TS_DEFS,
    "tsx": _TS_DEFS,
    "go": """
(function_declaration name: (identifier) @name) @def.function
(method_declaration receiver: (parameter_list) @scope name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(type_spec name: (type_identifier) @name) @def.type
(type_alias name: (type_identifier) @name) @def.type
(method_elem name: (field_identifier) @name) @def.method
(source_file (const_declaration (const_spec name: (identifier) @name) @def.constant))
(source_file (var_declaration (var_spec name: (identifier) @name) @def.variable))
""",
    "rust": """
(struct_item name: (_) @name) @def.struct
(union_item name: (_) @name) @def.struct
(enum_item name: (_) @name) @def.enum
(trait_item name: (_) @name) @def.trait
(type_item name: (_) @name) @def.type
(function_item name: (_) @name) @def.function
(function_signature_item name: (_) @name) @def.function
(mod_item name: (_) @name) @def.module
(macro_definition name: (_) @name) @def.macro
(const_item name: (_) @name) @def.constant
(static_item name: (_) @name) @def.constant
(impl_item type: (_) @name) @def.impl
""",
    "java": """
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(annotation_type_declaration name: (identifier) @name) @def.interface
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.constructor
""",
    "c": _C_DECLARATORS,
    "cpp": _CPP_DEFS,
    "ruby": """
(class name: (_) @name) @def.class
(module name: (_) @name) @def.module
(method name: (_) @name) @def.method
(singleton_method name: (_) @name) @def.method
(program (assignment left: (constant) @name) @def.constant)
""",
    "bash": """
(function_definition name: (word) @name) @def.function
(program (variable_assignment name: (variable_name) @name) @def.variable)
""",
}

_JS_REFS = frozenset({"identifier", "property_identifier", "shorthand_property_identifier"})
_TYPED_REFS = frozenset({"identifier", "field_identifier", "type_identifier"})

#: node types that count as a use of a name, per language (a Bash `word` only as a command name)
REFERENCE_TYPES: dict[str, frozenset[str]] = {
    "python": frozenset({"identifier"}),
    "javascript": _JS_REFS,
    "typescript": _JS_REFS | {"type_identifier"},
    "tsx": _JS_REFS | {"type_identifier"},
    "go": _TYPED_REFS,
    "rust": _TYPED_REFS,
    "java": frozenset({"identifier", "type_identifier"}),
    "c": _TYPED_REFS,
    "cpp": _TYPED_REFS | {"namespace_identifier"},
    "ruby": frozenset({"identifier", "constant"}),
    "bash": frozenset({"word", "variable_name"}),
}

#: kinds whose direct function children are methods (a Ruby module too: its methods are mixed in)
CLASS_LIKE = frozenset({"class", "struct", "interface", "trait", "impl", "enum"})

#: when one node is captured under two kinds, the earlier kind here wins (a Go struct is also a type spec)
KIND_ORDER: dict[str, int] = {
    k: i
    for i, k in enumerate(
        ("class", "struct", "interface", "trait", "enum", "impl", "module", "namespace", "constructor", "method",
         "function", "prototype", "type", "macro", "constant", "variable")
    )
}

#: identifiers too common to be useful references (receivers, keywords some grammars expose as identifiers)
STOP_REFS: dict[str, frozenset[str]] = {
    "python": frozenset({"self", "cls", "True", "False", "None"}),
    "javascript": frozenset({"this", "undefined", "require"}),
    "typescript": frozenset({"this", "undefined", "require"}),
    "tsx": frozenset({"this", "undefined", "require"}),
    "ruby": frozenset({"self"}),
}

