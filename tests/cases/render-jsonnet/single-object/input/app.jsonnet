// Numbers: jsonnet has only doubles; integral ones print as integers.
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one' },
  data: { half: std.toString(0.5) },
  binaryData: {}, immutable: true,
  extra: { max_safe: std.pow(2, 53), neg: -3, frac: 0.25 } }
