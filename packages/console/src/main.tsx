import { render } from 'preact';
import { App } from './app.js';
import { applyTheme } from './components/theme.js';
import './styles.css';

applyTheme();
render(<App />, document.getElementById('app')!);
