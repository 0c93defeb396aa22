import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  {
    // The value objects merge a class with an interface derived from the field table:
    // the getters and props it declares are installed from that same table at load.
    files: ["src/config/*-config.ts", "src/config/assume-role.ts"],
    rules: { "@typescript-eslint/no-unsafe-declaration-merging": "off" },
  },
  {
    files: ["**/*.mjs", "**/*.js"],
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        Buffer: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        URL: "readonly",
        performance: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
      },
    },
  },
);
