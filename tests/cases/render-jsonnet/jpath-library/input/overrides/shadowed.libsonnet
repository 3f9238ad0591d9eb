{ from: 'overrides' }
