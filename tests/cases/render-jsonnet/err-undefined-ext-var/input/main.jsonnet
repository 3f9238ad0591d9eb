{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: std.extVar('name') } }
